// layaObserveActivation reports every app activation (the user switched apps) to Go.
void layaObserveActivation(void);
