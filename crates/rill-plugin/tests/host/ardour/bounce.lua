-- A bounce of the rill VST3 instrument in Ardour, headless (ardour7-lua): a new
-- session on the dummy backend, one MIDI track with "rill MRT2" as its instrument,
-- the plugin's parameters set from $RILL_PARAMS ("Name=value;Name=value", values as
-- Ardour shows them), and 4 s from the session's start exported as 32-bit float WAV
-- (no dither, no normalisation) into $RILL_OUT. Driven by test_ardour.py.
local out = os.getenv("RILL_OUT")
local seconds = tonumber(os.getenv("RILL_SECONDS") or "4")
local params = {}
for name, value in string.gmatch(os.getenv("RILL_PARAMS") or "", "([^=;]+)=([^;]+)") do
  params[name] = tonumber(value)
end

local backend = AudioEngine:set_backend("None (Dummy)", "", "")
assert(backend, "Ardour's dummy backend is missing")
backend:set_buffer_size(512)
assert(create_session(out .. "/session", "rill", 48000), "cannot create a session")

local info = ARDOUR.LuaAPI.new_plugin_info("rill MRT2", ARDOUR.PluginType.VST3)
assert(not info:isnil(), "Ardour does not list the rill MRT2 VST3 (was the bundle scanned?)")
local tracks = Session:new_midi_track(ARDOUR.ChanCount(ARDOUR.DataType("midi"), 1),
  ARDOUR.ChanCount(ARDOUR.DataType("audio"), 2), true, info, nil, nil, 1, "rill",
  ARDOUR.PresentationInfo.max_order, ARDOUR.TrackMode.Normal, true)
local set = 0
for track in tracks:iter() do
  local insert = track:nth_plugin(0)
  local plugin = insert:to_insert():plugin(0)
  for i = 0, plugin:parameter_count() - 1 do
    local value = params[plugin:parameter_label(i)]
    if value ~= nil then
      assert(ARDOUR.LuaAPI.set_processor_param(insert, i, value))
      set = set + 1
    end
  end
end
local wanted = 0
for _ in pairs(params) do wanted = wanted + 1 end
assert(set == wanted, "not every parameter in RILL_PARAMS was found")

local export = Session:simple_export()
export:set_folder(out)
export:set_range(0, seconds * 48000)
assert(export:set_preset("3f1e6a52-8d0c-4c5e-b1a4-7e2f9d0c1b2a"), "the export preset is missing")
assert(export:run_export(), "the export failed")
print("rill bounce written")
close_session()
