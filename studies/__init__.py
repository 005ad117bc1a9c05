"""One-off measurement campaigns, outside the package: each names what it measures.

They are scripts run from the checkout's root (`python -m studies.device_page ...`, `bash
studies/device_study.sh ...`) that import jaxcap as any user would; jaxcap never imports them.
Their targets and sizes are hard-coded: a campaign is a record of what was asked.
"""
