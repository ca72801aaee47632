"""From observations to figures: scoring, statistics, gates, comparison and routing metrics."""
