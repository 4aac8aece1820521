//! (lands with the invoker issue)
