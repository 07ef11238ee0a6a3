"""`agent serve`: the HTTP API (runs, sessions, decisions, client tools' results, SSE event
streams), AG-UI at `/agui` and the web console at `/`, over the same Temporal client the `agent`
CLI uses.

- `config`: what the server is told (token, CORS origins, body limit, Web UI link) and the rule
  that it never binds beyond loopback without a token;
- `guards`: the bearer token and the request body limit (plain ASGI middleware);
- `errors`: every failure as a JSON body (422 naming the field; never a stack trace);
- `bodies`: the request bodies;
- `runs`, `sessions`: what each route does with Temporal (reusing `cli/`);
- `feeds`: one stream subscription per workflow, fanned out to every reader;
- `sse`, `agui`: the two wire forms of a run's events (`agui_mapping`: our events as AG-UI's;
  `agui_tools`: AG-UI's frontend tools as client-side tools);
- `app`: the FastAPI application; `serve`: the `agent serve` command (uvicorn).
"""
