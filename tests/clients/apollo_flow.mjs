// Apollo Client 4 from Node against a live API: HttpLink behind the persisted-queries link (when
// options.apq), uploads through apollo-upload-client, subscriptions over graphql-ws and over multipart HTTP.
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { loadDevMessages, loadErrorMessages } from "@apollo/client/dev";
import { SetContextLink } from "@apollo/client/link/context";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition, relayStylePagination } from "@apollo/client/utilities";
import UploadHttpLink from "apollo-upload-client/UploadHttpLink.mjs";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

import {
  collect,
  countingFetch,
  main,
  newAccount,
  newCounts,
  photoFile,
  photoTaskInput,
  proofSeen,
  sha256,
  step,
} from "./flow_support.mjs";
import * as docs from "./flow_support.mjs";

const [REGISTER, LOGIN, CREATE_TASK, TASKS, NODE, TASKS_BACK, SUBMIT_PHOTO, EVENTS] = [docs.REGISTER, docs.LOGIN, docs.CREATE_TASK, docs.TASKS, docs.NODE, docs.TASKS_BACK, docs.SUBMIT_PHOTO, docs.EVENTS].map((text) => gql(text));

function apolloClient(options, session, counts) {
  const auth = new SetContextLink(({ headers }) => ({
    headers: { ...headers, ...(session.token ? { authorization: `Bearer ${session.token}` } : {}) },
  }));
  const fetch = countingFetch(counts);
  const uploads = new UploadHttpLink({ uri: options.url, fetch });
  const queries = options.apq ? new PersistedQueryLink({ sha256 }).concat(uploads) : uploads;
  const wsClient = createClient({
    url: options.wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: () => ({ Authorization: `Bearer ${session.token}` }),
    on: { connected: () => (session.connections += 1) },
  });
  // multipart subscriptions: HttpLink asks for them itself when the operation is a subscription
  const multipart = new HttpLink({ uri: options.url, fetch });
  const subscriptions = ApolloLink.split(
    (operation) => operation.getContext().transport === "multipart",
    multipart,
    new GraphQLWsLink(wsClient),
  );
  const isSubscription = ({ query }) => {
    const definition = getMainDefinition(query);
    return definition.kind === "OperationDefinition" && definition.operation === "subscription";
  };
  const cache = new InMemoryCache({ typePolicies: { Query: { fields: { tasks: relayStylePagination() } } } });
  return {
    client: new ApolloClient({ link: ApolloLink.from([auth, ApolloLink.split(isSubscription, subscriptions, queries)]), cache }),
    wsClient,
  };
}

const ids = (connection) => connection.edges.map((edge) => edge.node.id);

// pages back from the end with fetchMore({before}); relayStylePagination puts each in front of the last
async function pageBackward(client) {
  // the forward pages above sit under the same cached field, which would answer `last: 2` from the cache
  client.cache.evict({ id: "ROOT_QUERY", fieldName: "tasks" });
  const watched = client.watchQuery({ query: TASKS_BACK, variables: { last: 2 } });
  let watching;
  const lastPage = new Promise((resolve, reject) => {
    watching = watched.subscribe({ next: (r) => r.dataState === "complete" && resolve(r), error: reject });
  });
  let page = (await lastPage).data.tasks;
  const pages = [ids(page)];
  while (page.pageInfo.hasPreviousPage) {
    page = (await watched.fetchMore({ variables: { before: page.pageInfo.startCursor } })).data.tasks;
    pages.push(ids(page));
  }
  watching.unsubscribe();
  return { pages, merged: ids(client.readQuery({ query: TASKS_BACK, variables: { last: 2 } }).tasks) };
}

async function flow(options) {
  loadDevMessages();
  loadErrorMessages();
  const counts = newCounts();
  const session = { token: null, connections: 0 };
  const { client, wsClient } = apolloClient(options, session, counts);
  const account = newAccount("apollo");

  step("sign in");
  await client.mutate({ mutation: REGISTER, variables: account });
  const login = (await client.mutate({ mutation: LOGIN, variables: account })).data.login;
  session.token = login.token;

  step("create tasks");
  const created = [];
  for (let i = 0; i < (options.tasks ?? 5); i += 1) {
    created.push((await client.mutate({ mutation: CREATE_TASK, variables: { input: photoTaskInput(`Apollo ${i}`) } })).data.createTask);
  }

  step("forward pages");
  // forward pages through fetchMore; relayStylePagination merges them in the cache
  const watched = client.watchQuery({ query: TASKS, variables: { first: 2 } });
  let watching;
  const firstResult = new Promise((resolve, reject) => {
    watching = watched.subscribe({ next: (r) => r.dataState === "complete" && resolve(r), error: reject });
  });
  let page = (await firstResult).data.tasks;
  const pages = [ids(page)];
  while (page.pageInfo.hasNextPage) {
    page = (await watched.fetchMore({ variables: { after: page.pageInfo.endCursor } })).data.tasks;
    pages.push(ids(page));
  }
  watching.unsubscribe();
  const merged = ids(client.readQuery({ query: TASKS, variables: { first: 2 } }).tasks);

  const backward = options.backward ? await pageBackward(client) : null;

  step("refetch");
  const refetched = (await client.query({ query: NODE, variables: { id: created[1].id }, fetchPolicy: "network-only" })).data.node;

  // a live event over graphql-ws: "0" replays this new account's feed from its start, then goes live
  step("live event");
  const live = collect(
    (observer) => client.subscribe({ query: EVENTS, variables: { after: "0" } }).subscribe(observer),
    proofSeen(created[0].id),
  );
  const firstProof = (await client.mutate({ mutation: SUBMIT_PHOTO, variables: { instanceId: created[0].currentInstance.id, photo: photoFile(options.photos[0]) } })).data.submitPhoto;
  const liveEvents = (await live);

  step("resume");
  // unsubscribed, the lazy socket closes; a proof lands meanwhile; resuming with `after` replays it
  const secondProof = (await client.mutate({ mutation: SUBMIT_PHOTO, variables: { instanceId: created[1].currentInstance.id, photo: photoFile(options.photos[1]) } })).data.submitPhoto;
  const lastSeen = liveEvents.at(-1).id;
  const resumed = (await collect(
    (observer) => client.subscribe({ query: EVENTS, variables: { after: lastSeen } }).subscribe(observer),
    proofSeen(created[1].id),
  ));

  step("subscription over HTTP");
  // the same feed over multipart HTTP, from the start
  const overHttp = (await collect(
    (observer) => client.subscribe({ query: EVENTS, variables: { after: "0" }, context: { transport: "multipart" } }).subscribe(observer),
    proofSeen(created[1].id),
  ));

  await wsClient.dispose();
  return {
    token: session.token,
    user: login.user,
    created: created.map((task) => task.id),
    pages,
    merged,
    backward,
    refetched,
    proofs: [firstProof, secondProof],
    liveEvents,
    resumedAfter: lastSeen,
    resumed,
    overHttp,
    connections: session.connections,
    requests: counts,
  };
}

await main(flow);
