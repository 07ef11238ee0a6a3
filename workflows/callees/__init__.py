"""What a tool call can reach, behind one protocol (`Callee`): the worker's own tools
(`LocalTool`), the tools of outside MCP servers (`McpTool`) and agent profiles run as child
workflows (`AgentCallee`). `ToolRound` screens, asks and observes the same way for all of them;
a new kind of callee is one new class here plus the line in `workflows.run_tools` that offers
it."""
