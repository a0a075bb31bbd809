// layaObserveMemoryPressure calls layaMemoryPressure (Go) on the main queue whenever the system
// reports memory pressure (warning or critical).
void layaObserveMemoryPressure(void);
