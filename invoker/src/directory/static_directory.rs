//! A fixed list of invokers (tests, multi-group sub-clusters). (Lands with the invoker issue.)
