"""Reports from result files only (scorecard.md, report.html, junit.xml, summary.json): the report's
data (`data`, its failures with their counterexamples in `failures`) and its rendering with the jinja2
templates in `templates/` (`render`). It imports neither the plugin nor the op database, so `torchcts report`
starts fast.
"""
