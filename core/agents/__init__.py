"""What both agents share (docs/architecture.md §6): the loop that streams a run's trace
(`streaming`), a conversation's memory of earlier turns (`memory`), the checkpointer of its
threads (`checkpoints`), the binding of a graph to a host's JSON options (`binding`) and the
compiling of a graph's wiring, plain or bound (`graphs`), and a node's model call that gives
way to the node's heuristic when it fails (`steps`). The
agentic search (`ask/`) and the task agent (`task/`) import these; neither imports the other's
infrastructure."""
