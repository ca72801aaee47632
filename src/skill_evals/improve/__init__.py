"""`skill-evals improve`: from a failed trigger verdict to a validated description.

Its own small pipeline over the shared stages: the cases are split into train and held-out
units (split), a proposer command suggests descriptions from the train failures (proposer),
each valid candidate runs on train on a private copy of the skill (edit, evaluate), and the best
one runs once on held-out next to the original (loop); figures and the decision (figures), then
the report, text and diff (report). docs/improve.md.
"""
