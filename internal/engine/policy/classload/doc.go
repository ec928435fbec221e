// Package classload is the classload policy: Twitter Scoot's load-based
// scheduling (seed 004). Jobs fall into classes by their requestor (regular
// expressions, first match wins); each class is entitled to a percentage of
// the queue's slots. Every cycle the idle slots go first to classes below
// their entitlement (entitlement rounds), then, when classes with waiting
// tasks remain, are loaned to them in proportion to their percentages (loan
// rounds). When long tasks on loaned slots keep the classes away from their
// percentages for too long, a rebalance stops the newest tasks of the classes
// above their target.
//
// The arithmetic lives in Distribute, a pure function over counts, so the
// seed's worked examples are table tests; Policy wraps it for the engine,
// keeps the rebalance clock between cycles and hands out the computed counts
// one slot at a time. The rounding rules are the ones DESIGN.md §4 settles:
// they are the only ones under which the seed's tables come out.
package classload
