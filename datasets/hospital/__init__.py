"""The inpatient toy table of the l-diversity paper (Figures 1, 2 and 4)."""
