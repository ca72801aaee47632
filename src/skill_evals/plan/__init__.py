"""What will run and when to stop: arms, scope, budgets, the ledger, settling and run control."""
