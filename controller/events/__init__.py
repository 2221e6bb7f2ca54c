"""Events: the durable outbox, Standard Webhooks signing, and delivery to webhooks and Slack."""
