"""HTTP and websocket glue: the GraphQL view, media, health, upload limits."""
