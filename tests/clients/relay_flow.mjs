// relay-runtime from Node against a live API, with the artifacts relay-compiler made from relay/RelayFlow.js:
// the store with its connection handler merging pages, uploadables as GraphQL multipart requests, and
// subscriptions over graphql-ws. Relay leaves the network layer to the app: this is the usual one.
import RelayRuntime from "relay-runtime";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

import CreateTask from "./relay/__generated__/RelayFlowCreateTaskMutation.graphql.js";
import Events from "./relay/__generated__/RelayFlowEventsSubscription.graphql.js";
import Login from "./relay/__generated__/RelayFlowLoginMutation.graphql.js";
import Register from "./relay/__generated__/RelayFlowRegisterMutation.graphql.js";
import SubmitPhoto from "./relay/__generated__/RelayFlowSubmitPhotoMutation.graphql.js";
import TaskFragment from "./relay/__generated__/RelayFlowTask_task.graphql.js";
import TaskRefetch from "./relay/__generated__/RelayFlowTaskRefetchQuery.graphql.js";
import TasksBack from "./relay/__generated__/RelayFlowTasksBackQuery.graphql.js";
import Tasks from "./relay/__generated__/RelayFlowTasksQuery.graphql.js";
import { collect, main, newAccount, photoFile, photoTaskInput, proofSeen, step } from "./flow_support.mjs";

const {
  ConnectionHandler,
  Environment,
  Network,
  Observable,
  RecordSource,
  Store,
  commitLocalUpdate,
  commitMutation,
  createOperationDescriptor,
  fetchQuery,
  getSelector,
  requestSubscription,
} = RelayRuntime;

// uploadables go as the GraphQL multipart request: operations, map, then the files
function requestBody(params, variables, uploadables) {
  if (!uploadables) return JSON.stringify({ query: params.text, variables, operationName: params.name });
  const names = Object.keys(uploadables);
  const form = new FormData();
  const nulled = Object.fromEntries(names.map((name) => [name, null]));
  form.append("operations", JSON.stringify({ query: params.text, variables: { ...variables, ...nulled }, operationName: params.name }));
  form.append("map", JSON.stringify(Object.fromEntries(names.map((name, i) => [String(i), [`variables.${name}`]]))));
  names.forEach((name, i) => form.append(String(i), uploadables[name]));
  return form;
}

function relayEnvironment(options, session, networkPages) {
  const fetchFn = async (params, variables, _cacheConfig, uploadables) => {
    const body = requestBody(params, variables, uploadables);
    const headers = {
      accept: "application/graphql-response+json, application/json",
      ...(typeof body === "string" ? { "content-type": "application/json" } : {}),
      ...(session.token ? { authorization: `Bearer ${session.token}` } : {}),
    };
    const result = await (await fetch(options.url, { method: "POST", headers, body })).json();
    if (Object.hasOwn(networkPages, params.name) && result.data) networkPages[params.name].push(result.data.tasks);
    if (result.errors) throw new Error(JSON.stringify(result.errors));
    return result;
  };
  const wsClient = createClient({
    url: options.wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: () => ({ Authorization: `Bearer ${session.token}` }),
    on: { connected: () => (session.connections += 1) },
  });
  const subscribeFn = (params, variables) =>
    Observable.create((sink) =>
      wsClient.subscribe({ operationName: params.name, query: params.text, variables }, sink),
    );
  const environment = new Environment({
    network: Network.create(fetchFn, subscribeFn),
    store: new Store(new RecordSource()),
  });
  return { environment, wsClient };
}

function mutate(environment, mutation, variables, uploadables) {
  return new Promise((resolve, reject) =>
    commitMutation(environment, {
      mutation,
      variables,
      uploadables,
      onCompleted: (response, errors) => (errors ? reject(new Error(JSON.stringify(errors))) : resolve(response)),
      onError: reject,
    }),
  );
}

// requestSubscription's callbacks as an observer of {data} events
const subscription = (environment, variables) => (observer) => {
  const disposable = requestSubscription(environment, {
    subscription: Events,
    variables,
    onNext: (response) => observer.next({ data: response }),
    onError: (error) => observer.error(error),
    onCompleted: () => observer.complete(),
  });
  return { unsubscribe: () => disposable.dispose() };
};

// the edges ConnectionHandler keeps for the connection, read from the store
function connectionIds(environment, key) {
  let found = [];
  commitLocalUpdate(environment, (store) => {
    const connection = ConnectionHandler.getConnection(store.getRoot(), key);
    found = connection.getLinkedRecords("edges").map((edge) => edge.getLinkedRecord("node").getValue("id"));
  });
  return found;
}

const ids = (connection) => connection.edges.map((edge) => edge.node.id);

// pages back from the end with `before`, the cursor from the page the network returned (fetchQuery answers
// with the connection as the store holds it); ConnectionHandler puts each page in front of RelayFlowBack_tasks
async function pageBackward(environment, networkPages) {
  const sent = networkPages.RelayFlowTasksBackQuery;
  await fetchQuery(environment, TasksBack, { last: 2, before: null }).toPromise();
  while (sent.at(-1).pageInfo.hasPreviousPage) {
    await fetchQuery(environment, TasksBack, { last: 2, before: sent.at(-1).pageInfo.startCursor }).toPromise();
  }
  const lastPage = createOperationDescriptor(TasksBack, { last: 2, before: null });
  return {
    pages: sent.map(ids),
    merged: ids(environment.lookup(lastPage.fragment).data.tasks),
    connection: connectionIds(environment, "RelayFlowBack_tasks"),
  };
}

async function flow(options) {
  const session = { token: null, connections: 0 };
  const networkPages = { RelayFlowTasksQuery: [], RelayFlowTasksBackQuery: [] };
  const { environment, wsClient } = relayEnvironment(options, session, networkPages);
  const account = newAccount("relay");

  step("sign in");
  await mutate(environment, Register, account);
  const login = (await mutate(environment, Login, account)).login;
  session.token = login.token;

  step("create tasks");
  const created = [];
  for (let i = 0; i < (options.tasks ?? 5); i += 1) {
    created.push((await mutate(environment, CreateTask, { input: photoTaskInput(`Relay ${i}`) })).createTask);
  }

  step("forward pages");
  // each page's payload goes through ConnectionHandler, which appends it to the RelayFlow_tasks connection
  let page = (await fetchQuery(environment, Tasks, { first: 2, after: null }).toPromise()).tasks;
  while (page.pageInfo.hasNextPage) {
    page = (await fetchQuery(environment, Tasks, { first: 2, after: networkPages.RelayFlowTasksQuery.at(-1).pageInfo.endCursor }).toPromise()).tasks;
  }
  const firstPage = createOperationDescriptor(Tasks, { first: 2, after: null });
  const merged = ids(environment.lookup(firstPage.fragment).data.tasks);
  const connection = connectionIds(environment, "RelayFlow_tasks");

  // backward from the newest: only where the API pages both ways (options.backward)
  const backward = options.backward ? await pageBackward(environment, networkPages) : null;

  step("refetch");
  // what useRefetchableFragment does: the generated node(id:) query, then the fragment read from the store
  const fragmentRef = (await fetchQuery(environment, TaskRefetch, { id: created[1].id }, { fetchPolicy: "network-only" }).toPromise()).node;
  const refetched = environment.lookup(getSelector(TaskFragment, fragmentRef)).data;

  step("live event");
  const live = collect(subscription(environment, { after: "0" }), proofSeen(created[0].id));
  const photo = (i) => ({ photo: photoFile(options.photos[i]) });
  const firstProof = (await mutate(environment, SubmitPhoto, { instanceId: created[0].currentInstance.id, photo: null }, photo(0))).submitPhoto;
  const liveEvents = await live;

  step("resume");
  // disposed, the lazy socket closes; a proof lands meanwhile; resuming with `after` replays it
  const secondProof = (await mutate(environment, SubmitPhoto, { instanceId: created[1].currentInstance.id, photo: null }, photo(1))).submitPhoto;
  const lastSeen = liveEvents.at(-1).id;
  const resumed = await collect(subscription(environment, { after: lastSeen }), proofSeen(created[1].id));

  await wsClient.dispose();
  return {
    token: session.token,
    user: login.user,
    created: created.map((task) => task.id),
    pages: networkPages.RelayFlowTasksQuery.map(ids),
    merged,
    connection,
    backward,
    refetched,
    proofs: [firstProof, secondProof],
    liveEvents,
    resumedAfter: lastSeen,
    resumed,
    connections: session.connections,
  };
}

await main(flow);
