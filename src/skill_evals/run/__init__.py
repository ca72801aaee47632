"""How invocations run: the runner contract, processes, the scheduler, workspaces, records and
observations."""
