"""Where alerts go: the org's notification settings (`service`) and delivery statistics
(`alerts_service`)."""
