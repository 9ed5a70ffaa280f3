// Apollo Client's automatic persisted queries against the live API, as an app with APQ enabled runs them:
//   node apollo_apq.mjs <url> <token> <alias>
// For POST and for useGETForHashedQueries: a first client's query (the hash misses, the link retries with
// the query), then a second client's (the hash alone). Prints {post, get}, each {data, requests} where a
// request is {method, query: sent the text, hash: sent a hash, code: the first error's code}.
import { createHash } from "node:crypto";
import { ApolloClient, gql, HttpLink, InMemoryCache } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";

const [url, token, alias] = process.argv.slice(2);
const sha256 = (text) => createHash("sha256").update(text).digest("hex");

function recordingFetch(requests) {
  return async (input, init) => {
    const target = new URL(typeof input === "string" ? input : input.url);
    const body = init.body ? JSON.parse(init.body) : {};
    const extensions = body.extensions ?? JSON.parse(target.searchParams.get("extensions") ?? "{}");
    const response = await fetch(input, init);
    const answer = await response.clone().json();
    requests.push({
      method: init.method,
      query: Boolean(body.query ?? target.searchParams.get("query")),
      hash: Boolean(extensions.persistedQuery?.sha256Hash),
      code: answer.errors?.[0]?.extensions?.code ?? null,
    });
    return response;
  };
}

async function run(useGETForHashedQueries, query) {
  const requests = [];
  const results = [];
  for (let i = 0; i < 2; i++) {
    const client = new ApolloClient({
      cache: new InMemoryCache(),
      link: new PersistedQueryLink({ sha256, useGETForHashedQueries }).concat(
        new HttpLink({ uri: url, headers: { authorization: `Bearer ${token}` }, fetch: recordingFetch(requests) }),
      ),
    });
    results.push((await client.query({ query, fetchPolicy: "network-only" })).data);
  }
  return { data: results, requests };
}

const post = await run(false, gql(`query ApqByPost { me { id ${alias}: displayName } }`));
const get = await run(true, gql(`query ApqByGet { me { id ${alias}: displayName } }`));
process.stdout.write(JSON.stringify({ post, get }) + "\n");
