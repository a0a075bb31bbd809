// layaQoSInteractive raises the calling thread to QOS_CLASS_USER_INTERACTIVE; 0 on success.
int layaQoSInteractive(void);
