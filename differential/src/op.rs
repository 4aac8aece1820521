//! One differential operation: a generator of inputs, our answer, and which differences are
//! listed divergences.

use proptest::strategy::BoxedStrategy;
use serde_json::Value;

/// A question both Dubbo (the oracle's op of the same name) and this workspace answer.
pub trait Operation: Send + Sync {
    /// Name shared with the oracle (`differential/oracle`).
    fn name(&self) -> &'static str;

    /// Generated inputs (realistic and nasty); shrinking follows the strategy.
    fn strategy(&self) -> BoxedStrategy<Value>;

    /// Fixed inputs asked before the generated ones (public vectors and past findings).
    fn seeds(&self) -> Vec<Value> {
        Vec::new()
    }

    /// Our answer, in the oracle's JSON shape.
    fn answer(&self, input: &Value) -> Value;

    /// Our answer once Java's is known, for questions with an input only Java can fix (the
    /// wall clock `getWeight` reads): `Some` replaces [`Operation::answer`]'s.
    fn answer_after(&self, _input: &Value, _java: &Value) -> Option<Value> {
        None
    }

    /// When Java and we differ on `input`: the rule of `docs/divergences.json` that makes this
    /// difference deliberate, or `None` (a failure).
    fn divergence(&self, _input: &Value, _java: &Value, _rust: &Value) -> Option<&'static str> {
        None
    }
}
