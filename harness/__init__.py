"""Driving a running Proofloop from outside, as a client and an operator would: its API and worker
processes, migrated databases, the GraphQL client, private PostgreSQL and redis-server instances to break,
a mailbox, media factories and the chaos run. Shared by tests/ and bench/; never imported by the service."""
