// urql from Node against a live API: graphcache with relayPagination, the persisted exchange (when
// options.apq), uploads by fetchExchange, subscriptions over graphql-ws and over HTTP (fetchSubscriptions).
import { Client, fetchExchange, gql, mapExchange, subscriptionExchange } from "@urql/core";
import { cacheExchange } from "@urql/exchange-graphcache";
import { relayPagination } from "@urql/exchange-graphcache/extras";
import { persistedExchange } from "@urql/exchange-persisted";
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

function urqlClient(options, session, counts, networkPages) {
  const wsClient = createClient({
    url: options.wsUrl,
    webSocketImpl: WebSocket,
    connectionParams: () => ({ Authorization: `Bearer ${session.token}` }),
    on: { connected: () => (session.connections += 1) },
  });
  const cache = cacheExchange({
    keys: { PageInfo: () => null, TaskEdge: () => null, TaskConnection: () => null },
    resolvers: { Query: { tasks: relayPagination() } },
  });
  // below the cache: the pages as the network returned them, before graphcache merges them
  const pages = mapExchange({
    onResult(result) {
      const name = result.operation.query.definitions[0].name?.value;
      if ((name === "Tasks" || name === "TasksBack") && result.operation.context.requestPolicy !== "cache-only") networkPages.push(result.data.tasks);
    },
  });
  const exchanges = [
    cache,
    pages,
    ...(options.apq ? [persistedExchange({ generateHash: async (query) => sha256(query), enableForMutation: true })] : []),
    subscriptionExchange({
      isSubscriptionOperation: (operation) => operation.kind === "subscription" && !operation.context.fetchSubscriptions,
      forwardSubscription: (request) => ({
        subscribe: (sink) => ({ unsubscribe: wsClient.subscribe({ ...request, query: request.query ?? "" }, sink) }),
      }),
    }),
    fetchExchange,
  ];
  const client = new Client({
    url: options.url,
    fetch: countingFetch(counts),
    fetchOptions: () => ({ headers: session.token ? { authorization: `Bearer ${session.token}` } : {} }),
    exchanges,
  });
  return { client, wsClient };
}

async function run(source) {
  const result = await source.toPromise();
  if (result.error) throw result.error;
  return result.data;
}

// urql's result stream as an observer of {data} events, errors as errors
const observe = (source) => (observer) =>
  source.subscribe((result) => (result.error ? observer.error(result.error) : observer.next({ data: result.data })));

const ids = (connection) => connection.edges.map((edge) => edge.node.id);

// pages back from the end with `before` (read from the network's pages: relayPagination answers with every
// page cached); it joins them with the forward ones
async function pageBackward(client, networkPages) {
  const seen = networkPages.length;
  // network-only: the forward pages already cached would answer the last page
  const fresh = { requestPolicy: "network-only" };
  await run(client.query(TASKS_BACK, { last: 2 }, fresh));
  while (networkPages.at(-1).pageInfo.hasPreviousPage) {
    await run(client.query(TASKS_BACK, { last: 2, before: networkPages.at(-1).pageInfo.startCursor }, fresh));
  }
  const pages = networkPages.splice(seen).map(ids);
  const merged = ids((await run(client.query(TASKS_BACK, { last: 2 }, { requestPolicy: "cache-only" }))).tasks);
  return { pages, merged };
}

async function flow(options) {
  const counts = newCounts();
  const session = { token: null, connections: 0 };
  const networkPages = [];
  const { client, wsClient } = urqlClient(options, session, counts, networkPages);
  const account = newAccount("urql");

  step("sign in");
  await run(client.mutation(REGISTER, account));
  const login = (await run(client.mutation(LOGIN, account))).login;
  session.token = login.token;

  step("create tasks");
  const created = [];
  for (let i = 0; i < (options.tasks ?? 5); i += 1) {
    created.push((await run(client.mutation(CREATE_TASK, { input: photoTaskInput(`urql ${i}`) }))).createTask);
  }

  step("forward pages");
  // forward pages; relayPagination answers every page's query with the pages joined so far
  let page = (await run(client.query(TASKS, { first: 2 }))).tasks;
  while (page.pageInfo.hasNextPage) {
    page = (await run(client.query(TASKS, { first: 2, after: page.pageInfo.endCursor }))).tasks;
  }
  const merged = ids((await run(client.query(TASKS, { first: 2 }, { requestPolicy: "cache-only" }))).tasks);

  const backward = options.backward ? await pageBackward(client, networkPages) : null;

  step("refetch");
  const refetched = (await run(client.query(NODE, { id: created[1].id }, { requestPolicy: "network-only" }))).node;

  step("live event");
  const live = collect(observe(client.subscription(EVENTS, { after: "0" })), proofSeen(created[0].id));
  const firstProof = (await run(client.mutation(SUBMIT_PHOTO, { instanceId: created[0].currentInstance.id, photo: photoFile(options.photos[0]) }))).submitPhoto;
  const liveEvents = await live;

  step("resume");
  // unsubscribed, the lazy socket closes; a proof lands meanwhile; resuming with `after` replays it
  const secondProof = (await run(client.mutation(SUBMIT_PHOTO, { instanceId: created[1].currentInstance.id, photo: photoFile(options.photos[1]) }))).submitPhoto;
  const lastSeen = liveEvents.at(-1).id;
  const resumed = await collect(observe(client.subscription(EVENTS, { after: lastSeen })), proofSeen(created[1].id));

  step("subscription over HTTP");
  // the same feed over HTTP (fetchExchange picks SSE or multipart), from the start
  const overHttp = await collect(
    observe(client.subscription(EVENTS, { after: "0" }, { fetchSubscriptions: true })),
    proofSeen(created[1].id),
  );

  await wsClient.dispose();
  return {
    token: session.token,
    user: login.user,
    created: created.map((task) => task.id),
    pages: networkPages.map(ids),
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
