//! One module per subcommand.

pub mod bench;
pub mod conformance;
pub mod demo;
pub mod list;
pub mod register;
pub mod watch;
