"""Settings an analysis reads beyond the file itself, handed to rules through their context."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisSettings:
    # Columns known to identify a row (`[tool.sparkpar] unique-columns`): "order_id" anywhere,
    # "events.event_id" only where the rows come from the `events` table or path.
    unique_columns: tuple[str, ...] = ()
    # The delay the SPX204 fix writes into `withWatermark` (`[tool.sparkpar] watermark-delay`).
    watermark_delay: str = "10 minutes"
    # Read the project's other modules for the functions a file imports from them.
    cross_file: bool = True
    # Where module summaries are kept between runs (None: in memory only).
    summary_dir: str | None = None

    def cache_text(self) -> str:
        """What of these settings can change findings, for cache keys."""
        return f"unique={','.join(sorted(self.unique_columns))};cross={self.cross_file};delay={self.watermark_delay}"
