"""Altair chart builders and the HTML report assembly (installed as `edgestats.reports`).

Chart builders are pure functions from an analysis result (a polars frame) to an alt.Chart.
"""
