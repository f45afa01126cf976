"""What both agents share (docs/architecture.md §6): the loop that streams a run's trace
(`streaming`), a conversation's memory of earlier turns (`memory`), the checkpointer of its
threads (`checkpoints`) and the binding of a graph to a host's JSON options (`binding`). The
agentic search (`ask/`) and the task agent (`task/`) import these; neither imports the other's
infrastructure."""
