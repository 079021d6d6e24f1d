//! Word tables of the English normaliser: months, abbreviations, units, street words.
//! Chosen by hand after NeMo's English data (`nemo_text_processing` 1.2.0,
//! `text_normalization/en/data`); only the everyday entries are here.

/// Month names and abbreviations (as written, capitalised) → the name NeMo speaks, which
/// it lower-cases in dates ("january fifth").
pub const MONTHS: &[(&str, &str)] = &[
    ("January", "january"),
    ("February", "february"),
    ("March", "march"),
    ("April", "april"),
    ("May", "may"),
    ("June", "june"),
    ("July", "july"),
    ("August", "august"),
    ("September", "september"),
    ("October", "october"),
    ("November", "november"),
    ("December", "december"),
    ("Jan", "january"),
    ("Feb", "february"),
    ("Mar", "march"),
    ("Apr", "april"),
    ("Jun", "june"),
    ("Jul", "july"),
    ("Aug", "august"),
    ("Sep", "september"),
    ("Sept", "september"),
    ("Oct", "october"),
    ("Nov", "november"),
    ("Dec", "december"),
];

/// Month numbers 1..=12 → spoken names.
pub const MONTH_NUMBERS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Whole words (their trailing `.` included) NeMo replaces.
pub const ABBREVIATIONS: &[(&str, &str)] = &[
    ("Dr.", "doctor"),
    ("Mr.", "mister"),
    ("Mrs.", "misses"),
    ("Ms.", "miss"),
    ("Jr.", "junior"),
    ("vs.", "versus"),
    ("vs", "versus"),
    ("etc.", "etcetera."),
    ("Mt.", "Mount"),
    ("Rev.", "Reverend"),
    ("Gov.", "governor"),
    ("Hon.", "honorable"),
    ("Ph.D.", "PHD"),
    ("apt.", "apartment"),
    ("Apt.", "Apartment"),
    ("dept.", "department"),
    ("bldg.", "building"),
    ("Bldg.", "Building"),
    ("w/o", "without"),
    ("c/o", "care of"),
];

/// Street words after which a house number is read as in addresses (lower-cased, without
/// the `.`) → the spoken word.
pub const STREET_WORDS: &[(&str, &str)] = &[
    ("st", "Street"),
    ("street", "Street"),
    ("expy", "Expressway"),
    ("fwy", "Freeway"),
    ("hwy", "Highway"),
    ("dr", "Drive"),
    ("ct", "Court"),
    ("ave", "Avenue"),
    ("av", "Avenue"),
    ("cir", "Circle"),
    ("blvd", "Boulevard"),
    ("alley", "Alley"),
    ("way", "Way"),
    ("jct", "Junction"),
];

/// Units after a number (matched without regard to case, except where the exact form is
/// listed first) → the singular spoken form. Spoken forms in capitals are spelled out by
/// NeMo ("12 m" → "twelve M") and never take a plural.
pub const UNITS: &[(&str, &str)] = &[
    ("°F", "degree Fahrenheit"),
    ("°f", "degree Fahrenheit"),
    ("℉", "degree Fahrenheit"),
    ("°C", "degree Celsius"),
    ("°c", "degree Celsius"),
    ("℃", "degree Celsius"),
    ("°", "degree"),
    ("km", "kilometer"),
    ("kg", "kilogram"),
    ("cm", "centimeter"),
    ("mm", "MM"),
    ("m", "M"),
    ("mg", "milligram"),
    ("ml", "milliliter"),
    ("g", "G"),
    ("ft", "foot"),
    ("mi", "mile"),
    ("yd", "yard"),
    ("mph", "mile per hour"),
    ("min", "minute"),
    ("sec", "second"),
    ("hr", "hour"),
    ("h", "H"),
    ("s", "S"),
    ("lb", "pound"),
    ("lbs", "pound"),
    ("oz", "ounce"),
    ("kw", "kilowatt"),
    ("kwh", "kilowatt hour"),
    ("hz", "hertz"),
    ("khz", "kilohertz"),
    ("mhz", "megahertz"),
    ("ghz", "gigahertz"),
    ("tb", "terabyte"),
    ("gb", "GB"),
    ("mb", "MB"),
    ("kb", "KB"),
    ("kcal", "kilo calory"),
    ("rpm", "revolution per minute"),
    ("mbps", "megabit per second"),
    ("kbps", "kilobit per second"),
    ("km2", "square kilometer"),
    ("km²", "square kilometer"),
    ("m2", "square meter"),
    ("m²", "square meter"),
    ("m3", "cubic meter"),
    ("m³", "cubic meter"),
    ("cm2", "square centimeter"),
    ("cm²", "square centimeter"),
    ("sq ft", "square foot"),
];

/// Currency signs written before the amount → (one, many, one minor, many minor).
pub const CURRENCIES: &[(char, [&str; 4])] = &[
    ('$', ["dollar", "dollars", "cent", "cents"]),
    ('£', ["pound", "pounds", "penny", "pence"]),
    ('€', ["euro", "euros", "cent", "cents"]),
];

/// Scale words after an amount ("$2.5 million").
pub const SCALE_WORDS: &[&str] = &["thousand", "million", "billion", "trillion"];
