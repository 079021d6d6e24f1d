//! Set-up shared by the stream tests.

use std::sync::{Arc, OnceLock};

use rill_checkpoint::Checkpoint;
use rill_mrt2::{ModelKind, Mrt2, Precision};
use rill_spectrostream::Codec;

/// The int8 LM and the codec of the small synthetic checkpoint (seed 0), loaded
/// once per test binary. int8 keeps the tests quick; the properties they check
/// are precision-independent.
pub fn weights() -> (Arc<Mrt2>, Arc<Codec>) {
    static W: OnceLock<(Arc<Mrt2>, Arc<Codec>)> = OnceLock::new();
    W.get_or_init(|| {
        let path = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
        let ck = Checkpoint::open(path).unwrap();
        (
            Arc::new(Mrt2::load(&ck, Precision::Int8).unwrap()),
            Arc::new(Codec::load(&ck).unwrap()),
        )
    })
    .clone()
}
