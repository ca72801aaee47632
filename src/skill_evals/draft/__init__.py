"""`skill-evals cases draft`: the drafter contract, the buckets sized for the gates, every drafted
case checked before it is written (docs/drafting.md)."""
