"""An org's named destinations: where its events go besides a watch's own webhook and the
org's default destination (issue 44). The routing and digest rule is pure
(`controller.model.routing`); the channels are registry entries (`controller.events.channels`:
`ORG_DESTINATION_KINDS`); `controller.events.fanout` queues an event for every destination that
takes it and `controller.events.health` keeps each one's health; `store` reads the rows and
`service` is what the API and the console call."""
