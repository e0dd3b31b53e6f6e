"""The breakdown analysis: where a run's time goes, load against inference (pCAMP Table 3)."""
