// The graphql-http server audit (GraphQL over HTTP spec) against a running API: node audit.mjs <url>
// Prints one JSON object: counts per outcome and every MUST failure / SHOULD warning with its reason.
import { auditServer } from "graphql-http";

const url = process.argv[2];
if (!url) {
  console.error("usage: node audit.mjs http://127.0.0.1:8000/graphql");
  process.exit(2);
}
const results = await auditServer({ url });
const counts = { ok: 0, warn: 0, error: 0 };
const problems = [];
for (const result of results) {
  counts[result.status] += 1;
  if (result.status !== "ok") {
    let body = "";
    try {
      body = await result.response.text();
    } catch {}
    problems.push({ status: result.status, name: result.name, reason: result.reason, body: body.slice(0, 300) });
  }
}
console.log(JSON.stringify({ total: results.length, ...counts, problems }));
