"""Capture: render pages in Chromium, fetch their assets, write the canonical tree (formats/tree.md).

Only the browser launcher has landed; the crawler arrives with the capture issue.
"""
