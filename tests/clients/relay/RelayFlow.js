// The Relay flow's documents, compiled by relay-compiler into ./__generated__ (`npm run relay`), CommonJS
// there (its package.json) since generated imports name no file extension.
// Never executed: relay_flow.mjs imports the compiled artifacts.
import { graphql } from "relay-runtime";

graphql`
  mutation RelayFlowRegisterMutation($email: String!, $password: String!, $displayName: String!) {
    register(email: $email, password: $password, displayName: $displayName) { token user { id } }
  }
`;

graphql`
  mutation RelayFlowLoginMutation($email: String!, $password: String!) {
    login(email: $email, password: $password) { token user { id email displayName } }
  }
`;

graphql`
  mutation RelayFlowCreateTaskMutation($input: CreateTaskInput!) {
    createTask(input: $input) { id title currentInstance { id } }
  }
`;

graphql`
  query RelayFlowTasksQuery($first: Int, $after: String) {
    tasks(first: $first, after: $after) @connection(key: "RelayFlow_tasks") {
      edges { cursor node { id title } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

// backward from the newest, under a connection of its own: a page with `before` goes in front of it
graphql`
  query RelayFlowTasksBackQuery($last: Int, $before: String) {
    tasks(last: $last, before: $before) @connection(key: "RelayFlowBack_tasks") {
      edges { cursor node { id title } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`;

// refetched by its global id: relay-compiler makes RelayFlowTaskRefetchQuery, node(id:) around the fragment
graphql`
  fragment RelayFlowTask_task on Task @refetchable(queryName: "RelayFlowTaskRefetchQuery") {
    id
    title
    state
  }
`;

graphql`
  mutation RelayFlowSubmitPhotoMutation($instanceId: ID!, $photo: Upload!) {
    submitPhoto(instanceId: $instanceId, photo: $photo) { id status method }
  }
`;

graphql`
  subscription RelayFlowEventsSubscription($after: ID) {
    verificationEvents(after: $after) { id type verification { id } task { id } }
  }
`;
