"""An org's named destinations: where its events go besides a watch's own webhook and the
org's default destination (issue 44). `model` is the pure routing and digest rule, `store`
reads and writes the rows, `fanout` queues an event for every destination that takes it,
`channels` holds the kinds that need the store (a Slack bot, e-mail per incident), and
`service` is what the API and the console call."""
