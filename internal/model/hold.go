package model

// ReasonHeld says a task waits because its job is held (allot hold): the
// job keeps its place in its group's order but starts nothing until it is
// released.
const ReasonHeld = "held"
