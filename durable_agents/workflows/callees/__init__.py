"""What a tool call can reach, behind one protocol (`Callee`): the worker's own tools
(`LocalTool`), the tools of outside MCP servers (`McpTool`), agent profiles run as child
workflows (`AgentCallee`), tools the client runs (`ClientTool`) and code mode's `run_code`
(`CodeMode`). `ToolRound` screens, asks and observes the same way for all of them; a new kind
of callee is one new class here (`PlainCallee` gives the defaults of one that is not a worker
tool) plus the line in `workflows.run_tools` that offers it."""
