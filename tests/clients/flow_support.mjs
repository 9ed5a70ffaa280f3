// What every client flow shares: its arguments, the documents' inputs, photo files and the JSON report.
//   node <client>_flow.mjs <graphql url> <options JSON: {"photos": [path, path], "tasks": n, "apq": bool}>
import { readFileSync } from "node:fs";
import { createHash, randomUUID } from "node:crypto";

export function flowArguments() {
  const [url, options] = process.argv.slice(2);
  if (!url) {
    console.error('usage: node <client>_flow.mjs http://127.0.0.1:8000/graphql \'{"photos": [...]}\'');
    process.exit(2);
  }
  return { url, wsUrl: url.replace(/^http/, "ws"), ...JSON.parse(options ?? "{}") };
}

export function newAccount(client) {
  const name = `${client}-${randomUUID().slice(0, 8)}`;
  return { email: `${name}@example.com`, password: "correct horse battery", displayName: name };
}

// A daily PHOTO task whose first instance is open now: due in 30 s, window one hour, grace one minute.
export function photoTaskInput(title) {
  // whole seconds: recurrence works in seconds
  const startsAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 30_000).toISOString();
  return {
    title,
    method: "PHOTO",
    schedule: { startsAt, rrule: "FREQ=DAILY", timezone: "UTC", windowSeconds: 3600, graceSeconds: 60 },
  };
}

export function photoFile(path) {
  return new File([readFileSync(path)], "proof.jpg", { type: "image/jpeg" });
}

export const sha256 = (text) => createHash("sha256").update(text).digest("hex");

// a GET request's query and extensions, from its URL
function fromUrl(input) {
  const params = new URL(typeof input === "string" ? input : input.url).searchParams;
  return { query: params.get("query"), extensions: JSON.parse(params.get("extensions") ?? "{}") };
}

// Counts what went over the wire: APQ requests by hash alone (and how many missed), with the text too,
// plain ones, subscriptions over HTTP, and multipart uploads
export function countingFetch(counts) {
  return async (input, init = {}) => {
    const multipart = init.body instanceof FormData;
    if (multipart) counts.multipart += 1;
    const body = multipart ? JSON.parse(init.body.get("operations")) : init.body ? JSON.parse(init.body) : fromUrl(input);
    const persisted = Boolean(body.extensions?.persistedQuery);
    if (persisted) counts[body.query ? "hashWithQuery" : "hashOnly"] += 1;
    else if (/^\s*subscription\b/.test(body.query ?? "")) counts.subscriptions += 1;
    else counts.plain += 1;
    const response = await fetch(input, init);
    if (persisted && !body.query && response.headers.get("content-type")?.includes("json")) {
      const answer = await response.clone().json();
      if (answer.errors?.some((e) => e.extensions?.code === "PERSISTED_QUERY_NOT_FOUND")) counts.misses += 1;
    }
    return response;
  };
}

export const newCounts = () => ({ hashOnly: 0, misses: 0, hashWithQuery: 0, plain: 0, subscriptions: 0, multipart: 0 });

// Events of a subscription until `done(events)` says enough (or `within` ms pass): then unsubscribes.
export function collect(subscribe, done, within = 20_000) {
  // `done` sees the events themselves, unwrapped from {data: {verificationEvents}}
  return new Promise((resolve, reject) => {
    const events = [];
    let subscription;
    const timer = setTimeout(() => finish(new Error(`subscription: ${events.length} events, not enough`)), within);
    const finish = (error) => {
      clearTimeout(timer);
      subscription?.unsubscribe();
      error ? reject(error) : resolve(events);
    };
    subscription = subscribe({
      next: (event) => {
        if (event.errors) return finish(new Error(JSON.stringify(event.errors)));
        events.push(event.data.verificationEvents);
        if (done(events)) finish();
      },
      error: (error) => finish(error instanceof Error ? error : new Error(JSON.stringify(error))),
      complete: () => finish(new Error("subscription completed early")),
    });
  });
}

// known before the upload returns: its event may arrive first
export const proofSeen = (taskId) => (events) =>
  events.some((e) => e.type === "PROOF_SUBMITTED" && e.task.id === taskId);

export function report(result) {
  process.stdout.write(JSON.stringify(result) + "\n");
}

let currentStep = "start";

// Names the step a failure happened in, for the test's message.
export function step(name) {
  currentStep = name;
}

export async function main(flow) {
  // an unsubscribed HTTP stream's aborted read: a browser only logs it, Node would exit
  process.on("unhandledRejection", (error) => {
    if (error?.name === "AbortError") return console.error(`aborted stream after step ${currentStep}`);
    console.error(`failed at step ${currentStep}:`, error?.stack ?? error);
    process.exit(1);
  });
  try {
    report(await flow(flowArguments()));
    process.exit(0);
  } catch (error) {
    console.error(`failed at step ${currentStep}:`, error?.stack ?? error);
    if (error?.graphQLErrors) console.error(JSON.stringify(error.graphQLErrors));
    process.exit(1);
  }
}

// the documents the Apollo and urql flows share (each wraps them in its own gql); printed alike, they
// share APQ hashes too
export const REGISTER = `
  mutation Register($email: String!, $password: String!, $displayName: String!) {
    register(email: $email, password: $password, displayName: $displayName) { token user { id } }
  }
`;
export const LOGIN = `
  mutation Login($email: String!, $password: String!) {
    login(email: $email, password: $password) { token user { id email displayName } }
  }
`;
export const CREATE_TASK = `
  mutation CreateTask($input: CreateTaskInput!) {
    createTask(input: $input) { id title currentInstance { id } }
  }
`;
export const TASKS = `
  query Tasks($first: Int, $after: String) {
    tasks(first: $first, after: $after) {
      edges { cursor node { id title } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
`;
export const NODE = `
  query Node($id: ID!) {
    node(id: $id) { id ... on Task { title state } }
  }
`;
// backward from the newest: only where the API pages both ways (options.backward)
export const TASKS_BACK = `
  query TasksBack($last: Int, $before: String) {
    tasks(last: $last, before: $before) {
      edges { cursor node { id title } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
`;
export const SUBMIT_PHOTO = `
  mutation SubmitPhoto($instanceId: ID!, $photo: Upload!) {
    submitPhoto(instanceId: $instanceId, photo: $photo) { id status method }
  }
`;
export const EVENTS = `
  subscription Events($after: ID) {
    verificationEvents(after: $after) { id type verification { id } task { id } }
  }
`;
