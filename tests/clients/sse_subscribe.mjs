// One subscription through the graphql-sse client (distinct connections mode), as a browser app would:
//   node sse_subscribe.mjs <url> <token> <query> [variables JSON]
// Prints one JSON line per result ({"next": ...}), then {"complete": true} or {"error": ...}.
import { createClient } from "graphql-sse";

const [url, token, query, variables] = process.argv.slice(2);
const client = createClient({
  url,
  singleConnection: false,
  retryAttempts: 0,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");
client.subscribe(
  { query, variables: variables ? JSON.parse(variables) : undefined },
  {
    next: (result) => print({ next: result }),
    error: (error) => {
      print({ error: error instanceof Error ? error.message : error });
      process.exit(1);
    },
    complete: () => {
      print({ complete: true });
      process.exit(0);
    },
  },
);
