//! One module per subcommand.

pub mod conformance;
