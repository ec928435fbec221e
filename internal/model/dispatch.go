package model

// Names of the dispatcher modes and selection strategies in configuration
// (seed 002), in the order of the engine's enumerations (place.Mode,
// place.Strategy). Documents check them here, without the engine; a test
// of package config keeps them equal to the engine's.
var (
	DispatchModes       = []string{"adaptive", "static-worker", "fixed-pipeline", "round-robin"}
	SelectionStrategies = []string{"first-fit", "min-satisfying", "best"}
)
