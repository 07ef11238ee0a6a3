"""Who may do what on the servers (`agent serve`, `agent mcp --http`, `agent a2a`): the
principals file and its tokens, OIDC, and the one ASGI middleware that authenticates every
request to a `contracts.principals.Principal` (`request.state.principal`)."""
