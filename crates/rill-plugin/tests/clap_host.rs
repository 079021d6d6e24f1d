//! The CLAP side in a host: a small host on `clack-host` loads the plugin's
//! library (the `.so` `scripts/bundle-plugin` renames to `rill.clap`), reads the
//! latency it reports, switches it to offline rendering (CLAP's render
//! extension) and bounces 2 s from a chord held from the first sample: behind the
//! latency, the samples are the generator's (`rill generate --notes`'s).

use clack_extensions::latency::PluginLatency;
use clack_extensions::render::{PluginRender, RenderMode};
use clack_host::events::event_types::NoteOnEvent;
use clack_host::prelude::*;
use rill_mrt2::ModelKind;
use rill_plugin::bridge::{Settings, FRAME_SAMPLES, LATENCY_SAMPLES};

#[allow(dead_code)]
mod common;
use common::CHORD;

struct Shared;

impl SharedHandler<'_> for Shared {
    fn request_restart(&self) {}
    fn request_process(&self) {}
    fn request_callback(&self) {}
}

struct TestHost;

impl HostHandlers for TestHost {
    type Shared<'a> = Shared;
    type MainThread<'a> = ();
    type AudioProcessor<'a> = ();
}

const FRAMES: usize = 50;
const BLOCK: usize = 512;

/// The plugin library cargo built beside this test.
fn library() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let name = format!(
        "{}rill_plugin{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let lib = dir.join(&name);
    assert!(lib.is_file(), "no {} beside the test", lib.display());
    lib
}

/// The rill instrument, instantiated from the plugin library cargo built.
fn instantiate() -> PluginInstance<TestHost> {
    // SAFETY: the library is this crate's own plugin, built by cargo for this test.
    let entry = unsafe { PluginEntry::load(library()) }.expect("loading the CLAP entry");
    let factory = entry.get_plugin_factory().expect("a plugin factory");
    let id = factory
        .plugin_descriptors()
        .find_map(|d| d.id().filter(|id| id.to_bytes() == b"org.rill.mrt2"))
        .expect("the rill instrument in the factory")
        .to_owned();
    let host = HostInfo::new("rill test host", "rill", "https://example.invalid", "0.1").unwrap();
    PluginInstance::<TestHost>::new(|_| Shared, |_| (), &entry, &id, &host).unwrap()
}

#[test]
fn a_clap_host_bounces_the_generators_stream() {
    let checkpoint = rill_testkit::synthetic_checkpoint(ModelKind::Small.synth_file(0));
    // The plugin finds its checkpoint as `rill` does, and keeps its int8 copy in
    // the tests' cache, not the user's.
    std::env::set_var("RILL_CHECKPOINT", &checkpoint);
    std::env::set_var("XDG_CACHE_HOME", rill_testkit::user_cache_home());
    let want = common::reference_with(FRAMES, &Settings::default());

    let mut instance = instantiate();
    let render = instance
        .plugin_handle()
        .get_extension::<PluginRender>()
        .expect("the render extension");
    render
        .set(&instance.plugin_handle(), RenderMode::Offline)
        .expect("offline rendering");
    let config = PluginAudioConfiguration {
        sample_rate: 48_000.0,
        min_frames_count: 1,
        max_frames_count: BLOCK as u32,
    };
    let processor = instance.activate(|_, _| (), config).unwrap();
    let latency = instance
        .plugin_handle()
        .get_extension::<PluginLatency>()
        .expect("the latency extension")
        .get(&instance.plugin_handle());
    assert_eq!(latency, LATENCY_SAMPLES);

    let mut processor = processor.start_processing().unwrap();
    let total = latency as usize + FRAMES * FRAME_SAMPLES;
    let mut got = Vec::with_capacity(2 * total);
    let (mut left, mut right) = (vec![0f32; BLOCK], vec![0f32; BLOCK]);
    let mut input_ports = AudioPorts::with_capacity(0, 0);
    let mut output_ports = AudioPorts::with_capacity(2, 1);
    let mut output_events = EventBuffer::new();
    let chord: [NoteOnEvent; 3] =
        CHORD.map(|k| NoteOnEvent::new(0, Pckn::new(0u16, 0u16, u16::from(k), k as u32), 0.8));
    let none: [NoteOnEvent; 0] = [];
    let mut block = 0;
    while got.len() < 2 * total {
        let n = BLOCK.min(total - got.len() / 2);
        let input_events = if block == 0 {
            InputEvents::from_buffer(&chord)
        } else {
            InputEvents::from_buffer(&none)
        };
        let input_audio = input_ports.with_input_buffers(std::iter::empty::<
            AudioPortBuffer<
                std::iter::Empty<InputChannel<f32>>,
                std::iter::Empty<InputChannel<f64>>,
            >,
        >());
        let mut output_audio = output_ports.with_output_buffers([AudioPortBuffer {
            latency: 0,
            channels: AudioPortBufferType::f32_output_only(
                [&mut left[..n], &mut right[..n]].into_iter(),
            ),
        }]);
        let mut out_events = OutputEvents::from_buffer(&mut output_events);
        processor
            .process(
                &input_audio,
                &mut output_audio,
                &input_events,
                &mut out_events,
                None,
                None,
            )
            .unwrap();
        for k in 0..n {
            got.push(left[k]);
            got.push(right[k]);
        }
        block += 1;
    }
    let processor = processor.stop_processing();
    instance.deactivate(processor);

    let latency = latency as usize;
    assert!(got[..2 * latency].iter().all(|&s| s == 0.0));
    let differ = got[2 * latency..]
        .iter()
        .zip(&want)
        .position(|(a, b)| a != b);
    assert_eq!(differ, None, "the CLAP bounce differs from the generator");
}

/// The JSON of a nice-plug CLAP state.
fn json_of(state: &[u8]) -> String {
    assert!(state.len() > 8, "a state of {} bytes", state.len());
    let len = u64::from_le_bytes(state[..8].try_into().unwrap()) as usize;
    assert_eq!(len, state.len() - 8, "the length prefix");
    String::from_utf8(state[8..].to_vec()).unwrap()
}

/// `json` as a nice-plug CLAP state.
fn framed(json: &str) -> Vec<u8> {
    let mut v = (json.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v
}

/// The plugin's state through CLAP's state extension: it saves its parameters and
/// the checkpoint path, takes them back, and refuses a blob that is not its state
/// (the instance keeps its values).
#[test]
fn the_state_round_trips_and_a_foreign_blob_is_refused() {
    use clack_extensions::state::PluginState;

    let mut instance = instantiate();
    let state = instance
        .plugin_handle()
        .get_extension::<PluginState>()
        .expect("the state extension");
    let mut saved = Vec::new();
    state.save(&instance.plugin_handle(), &mut saved).unwrap();
    // nice-plug's CLAP state: the JSON's length (8 bytes, little-endian), the JSON.
    let text = json_of(&saved);
    assert!(text.contains("checkpoint"), "{text}");
    assert!(text.contains("temperature"), "{text}");

    // A project that names its checkpoint.
    let named = text.replacen(
        r#""checkpoint":"\"\"""#,
        r#""checkpoint":"\"/models/mrt2_small.safetensors\"""#,
        1,
    );
    assert_ne!(named, text, "the checkpoint field as saved: {text}");
    state
        .load(&instance.plugin_handle(), &mut &framed(&named)[..])
        .expect("its own state, edited");
    let mut again = Vec::new();
    state.save(&instance.plugin_handle(), &mut again).unwrap();
    assert!(json_of(&again).contains("/models/mrt2_small.safetensors"));

    let foreign: [&[u8]; 5] = [
        b"not a rill state",
        b"",
        &[0xff; 64],
        &framed("not json at all"),
        &framed(r#"{"version": 3, "params": []}"#),
    ];
    for blob in foreign {
        assert!(
            state
                .load(&instance.plugin_handle(), &mut &blob[..])
                .is_err(),
            "a foreign blob was taken: {blob:?}"
        );
    }
    let mut kept = Vec::new();
    state.save(&instance.plugin_handle(), &mut kept).unwrap();
    assert_eq!(kept, again, "a refused blob changed the state");
}
