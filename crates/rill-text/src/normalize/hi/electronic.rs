//! NeMo's Hindi "electronic" class (`taggers/electronic.py`, `verbalizers/electronic.py`):
//! Latin words of two letters or more, codes mixing letters and digits ("G20", "COVID-19"),
//! web and e-mail addresses, IP addresses and paths, read letter by letter ("Delhi" →
//! "डी ई एल एच आई") with the words of its tables read whole ("apples" → "एप्पल एस") and
//! symbols named ("-" → "हाइफ़न", "." → "डॉट").

use super::{is_digit, LETTERS, WORDS};

/// Names read whole (`electronic/server_name.tsv`; a row without a tab is left out).
const SERVERS: &str = "\
gmail=जीमेल;yahoo=याहू;hotmail=हॉटमेल;outlook=आउटलुक;live=लाइव;google=गूगल;\
microsoft=माइक्रोसॉफ्ट;facebook=फ़ेसबुक;twitter=ट्विटर;instagram=इंस्टाग्राम;\
linkedin=लिंक्डइन;youtube=यूट्यूब;amazon=अमेज़ोन;wikipedia=विकिपीडिया;\
github=गिटहब;reddit=रेडिट;netflix=नेटफ्लिक्स;spotify=स्पॉटिफाई;apple=एप्पल;\
samsung=सैमसंग;nvidia=एनविडिया;intel=इंटेल;adobe=अडोब;wordpress=वर्डप्रेस;\
blogger=ब्लॉगर;mentalfloss=मेंटल फ्लॉस;placekitten=प्लेस किटन;\
dummyimage=डमी इमेज;reliablesoft=रिलाएबल सॉफ्ट;ebay=ई बे;moz=मोज़;\
mozilla=मॉज़िला;genius=जीनियस;groupon=ग्रुप ऑन;gutenberg=गुटेनबर्ग;\
recipepuppy=रेसिपी पप्पी;buyagift=बाय अ गिफ्ट;webmd=वेब एम डी;\
researchgate=रिसर्च गेट;afternic=आफ्टर निक;hipolabs=हिपो लैब्स;\
licindia=एल आई सी इंडिया;placeimg=प्लेस आई एम जी;codecademy=कोड कैडेमी;\
skillshop=स्किलशॉप;skillshare=स्किल शेयर;udemy=यूडेमी;masterclass=मास्टरक्लास;\
amity=एमिटी;sharda=शारदा;universities=यूनिवर्सिटीज़;\
southmountaincc=साउथ माउन्टेन सी सी;academyart=अकेडमी आर्ट;\
bryanuniversity=ब्रायन यूनिवर्सिटी;centralaz=सेंट्रल ए ज़ेड;alaska=अलास्का;\
phoenix=फीनिक्स;phoenixcollege=फीनिक्स कॉलेज;maricopa=मैरीकोपा;\
prescott=प्रेसकॉट;azwestern=ए ज़ेड वेस्टर्न;poetry=पोएट्री;harvard=हावर्ड";

/// Words read whole (`electronic/common_words.tsv`).
const COMMON: &str = "\
about=अबाउट;blog=ब्लॉग;home=होम;index=इंडेक्स;login=लॉगिन;register=रजिस्टर;\
search=सर्च;tags=टैग्स;category=केटेगरी;categories=केटेगरीज़;post=पोस्ट;\
posts=पोस्ट्स;page=पेज;pages=पेजेस;user=यूज़र;users=यूज़र्स;Users=यूज़र्स;\
User=यूज़र;Desktop=डेस्कटॉप;Documents=डॉक्युमेंट्स;Downloads=डाउनलोड्स;\
Music=म्यूज़िक;Pictures=पिक्चर्स;Videos=वीडियोज़;admin=एडमिन;app=ऐप;\
faq=एफ ए क्यू;help=हेल्प;terms=टर्म्स;privacy=प्राइवेसी;contact=कॉन्टैक्ट;\
main=मेन;explore=एक्सप्लोर;wiki=विकी;docs=डॉक्स;download=डाउनलोड;\
downloads=डाउनलोड्स;upload=अपलोड;uploads=अपलोड्स;photos=फ़ोटोज़;images=इमेजेज़;\
music=म्यूज़िक;video=वीडियो;videos=वीडियोज़;desktop=डेस्कटॉप;\
documents=डॉक्युमेंट्स;master=मास्टर;blob=ब्लॉब;tree=ट्री;tests=टेस्ट्स;\
test=टेस्ट;config=कॉन्फ़िग;settings=सेटिंग्स;profile=प्रोफ़ाइल;account=अकाउंट;\
web=वेब;email=ई मेल;laptop=लैपटॉप;mobile=मोबाइल;phone=फोन;phones=फोन्स;\
online=ऑनलाइन;courses=कोर्सेज़;learn=लर्न;learning=लर्निंग;\
university=यूनिवर्सिटी;academy=अकेडमी;domain=डोमेन;domains=डोमेन्स;\
analysis=अनैलिसिस;play=प्ले;maps=मैप्स;drive=ड्राइव;cloud=क्लाउड;\
services=सर्विसेज़;india=इंडिया;screenshot=स्क्रीनशॉट;zoom=ज़ूम;\
audacity=ऑडेसिटी;coursera=कोर्सेरा;apache=अपाची;kernel=कर्नल;bin=बिन;var=वार;\
home=होम;activate=एक्टिवेट;sites=साइट्स;available=अवेलेबल;enabled=इनेबल्ड;\
backups=बैकअप्स;temp=टेम्प;secure=सेक्योर;real=रियल;data=डेटा;work=वर्क;\
survey=सर्वे;files=फाइल्स;file=फ़ाइल;chapter=चैप्टर;python=पाइथन;audio=ऑडियो;\
sample=सैंपल;templates=टेम्पलेट्स;impress=इंप्रेस;office=ऑफिस;\
libreoffice=लिब्रे ऑफिस;express=एक्सप्रेस;scribe=स्क्राइब;\
transcription=ट्रांसक्रिप्शन;software=सॉफ्टवेयर;teams=टीम्स;school=स्कूल;\
space=स्पेस;green=ग्रीन;brown=ब्राउन;white=व्हाइट;black=ब्लैक;homepage=होमपेज;\
content=कंटेन्ट;default=डिफ़ॉल्ट;foodhealth=फूड हेल्थ;workflows=वर्कफ्लोज़;\
world=वर्ल्ड;list=लिस्ट;and=एंड;LICENSE=लाइसेंस;license=लाइसेंस;tag=टैग;\
blogs=ब्लॉग्स;bath=बाथ;ward=वार्ड;banks=बैंक्स;Audio=ऑडियो;dean=डीन;rice=राइस;\
honda=होंडा;ford=फोर्ड;house=हाउस;bharat=भरत;rich=रिच;cook=कुक;lane=लेन;\
knight=नाइट;moody=मूडी;wise=वाइज़;shields=शील्ड्स;puppy=पप्पी;recipe=रेसिपी;\
hall=हॉल;mason=मेसन;king=किंग;fry=फ्राई;flowers=फ्लावर्स;assam=आसाम;grace=ग्रेस;\
bishop=बिशप;woods=वुड्स;brewer=ब्रूअर;cannon=कैनन;saute=सौटे;pope=पोप;\
robin=रॉबिन;price=प्राइस;address=एड्रेस";

/// Top-level domains (`electronic/domain.tsv`).
const DOMAINS: &str = "\
com=कॉम;org=ऑर्ग;net=नेट;edu=ई डी यू;gov=जी ओ वी;biz=बिज़;info=इन्फो;in=इन;\
co=सी ओ;io=आई ओ;ai=ए आई;uk=यू के;us=यू एस;ru=आर यू;de=डी ई;fr=एफ आर;jp=जे पी;\
cn=सी एन;au=ए यू;ca=सी ए;br=बी आर;ac=ए सी;res=आर ई एस;nic=एन आई सी;\
ernet=ई आर नेट;mil=एम आई एल;int=आई एन टी;tv=टी वी;me=एम ई;tech=टेक;dev=डी ई वी;\
app=ऐप;xyz=एक्स वाई ज़ेड;online=ऑनलाइन;store=स्टोर;blog=ब्लॉग;site=साइट;\
pro=प्रो";

/// File extensions (`electronic/file_extensions.tsv`).
const EXTENSIONS: &str = "\
jpg=जे पी जी;jpeg=जे पी ई जी;png=पी एन जी;gif=जी आई एफ;pdf=पी डी एफ;doc=डी ओ सी;\
docx=डी ओ सी एक्स;xls=एक्स एल एस;xlsx=एक्स एल एस एक्स;ppt=पी पी टी;\
pptx=पी पी टी एक्स;csv=सी एस वी;txt=टी एक्स टी;html=एच टी एम एल;htm=एच टी एम;\
xml=एक्स एम एल;json=जे एस ओ एन;css=सी एस एस;js=जे एस;py=पी वाई;java=जावा;\
cpp=सी पी पी;zip=ज़िप;rar=आर ए आर;tar=टी ए आर;mp3=एम पी तीन;mp4=एम पी चार;\
avi=ए वी आई;mkv=एम के वी;mov=एम ओ वी;wav=डब्ल्यू ए वी;svg=एस वी जी;ico=आई सी ओ;\
apk=ए पी के;exe=ई एक्स ई;dmg=डी एम जी;iso=आई एस ओ;sql=एस क्यू एल;log=एल ओ जी;\
bak=बी ए के;JPG=जे पी जी;JPEG=जे पी ई जी;PNG=पी एन जी;PDF=पी डी एफ;DOC=डी ओ सी;\
DOCX=डी ओ सी एक्स;CSV=सी एस वी;TXT=टी एक्स टी;HTML=एच टी एम एल;MP3=एम पी तीन;\
MP4=एम पी चार";

/// Symbols (`electronic/symbols.tsv`).
const SYMBOLS: &[(char, &str)] = &[
    ('.', "डॉट"),
    ('-', "हाइफ़न"),
    ('_', "अंडर स्कोर"),
    ('@', "एट"),
    ('/', "फॉरवर्ड स्लैश"),
    ('\\', "बैकवर्ड स्लैश"),
    (':', "कोलन"),
    ('#', "हैशटैग"),
    ('$', "डॉलर"),
    ('%', "प्रतिशत"),
    ('&', "एंड"),
    ('+', "प्लस"),
    ('=', "इक्वल"),
    ('?', "क्वेश्चन मार्क"),
    ('*', "स्टार"),
    ('!', "एक्सक्लेमेशन मार्क"),
    ('~', "टिल्डा"),
    ('^', "कैरेट"),
    ('|', "पाइप"),
    ('`', "बैकटिक"),
    (';', "सेमीकोलन"),
    (',', "कॉमा"),
    ('(', "ओपन ब्रेकेट"),
    (')', "क्लोज़ ब्रेकेट"),
    ('\'', "सिंगल कोट"),
    ('"', "डबल कोट"),
    ('<', "लेस दैन"),
    ('>', "ग्रेटर दैन"),
    ('[', "ओपन स्क्वेर ब्रेकेट"),
    (']', "क्लोज़ स्क्वेर ब्रेकेट"),
    ('{', "ओपन कर्ली ब्रेकेट"),
    ('}', "क्लोज़ कर्ली ब्रेकेट"),
];

fn table(packed: &'static str) -> impl Iterator<Item = (&'static str, &'static str)> {
    packed.split(';').filter_map(|p| p.split_once('='))
}

fn symbol(c: char) -> Option<&'static str> {
    SYMBOLS.iter().find(|(k, _)| *k == c).map(|(_, v)| *v)
}

/// A letter (either case), a Latin, Devanagari or subscript digit.
fn char_word(c: char) -> Option<&'static str> {
    if c.is_ascii_alphabetic() {
        let l = c.to_ascii_lowercase();
        return LETTERS
            .iter()
            .find(|(k, _)| k.starts_with(l))
            .map(|(_, v)| *v);
    }
    if is_digit(c) {
        return c
            .to_digit(10)
            .or_else(|| Some(c as u32 - '०' as u32))
            .map(|d| WORDS[d as usize]);
    }
    ('₀'..='₉')
        .contains(&c)
        .then(|| WORDS[(c as u32 - '₀' as u32) as usize])
}

/// The cheapest reading of `s` as NeMo's verbalizer weighs it: a table word 0.9, a dot and
/// a top-level domain 0.95 (when `tld`), a symbol 1.0, a letter or digit 1.1.
fn spell(s: &str, words: &[&'static str], tld: bool) -> Option<String> {
    let at: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    let n = at.len() - 1;
    let index = |byte: usize| at.binary_search(&byte).ok();
    let mut best: Vec<(f32, usize, &str)> = vec![(f32::INFINITY, 0, ""); n + 1];
    best[n].0 = 0.0;
    for i in (0..n).rev() {
        let rest = &s[at[i]..];
        let c = rest.chars().next().unwrap_or(' ');
        let consider =
            |end: usize, cost: f32, word: &'static str, best: &mut Vec<(f32, usize, &str)>| {
                let total = cost + best[end].0;
                if total < best[i].0 {
                    best[i] = (total, end, word);
                }
            };
        for (k, v) in words.iter().flat_map(|t| table(t)) {
            if let Some(end) = rest
                .starts_with(k)
                .then(|| index(at[i] + k.len()))
                .flatten()
            {
                consider(end, 0.9, v, &mut best);
            }
        }
        if tld && c == '.' {
            for (k, v) in table(DOMAINS) {
                if let Some(end) = rest[1..]
                    .starts_with(k)
                    .then(|| index(at[i] + 1 + k.len()))
                    .flatten()
                {
                    consider(end, 0.95, v, &mut best);
                }
            }
        }
        if let Some(v) = symbol(c) {
            consider(i + 1, 1.0, v, &mut best);
        }
        if let Some(v) = char_word(c) {
            consider(i + 1, 1.1, v, &mut best);
        }
    }
    if !best[0].0.is_finite() {
        return None;
    }
    let mut out: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < n {
        let (_, end, word) = best[i];
        if s[at[i]..].starts_with('.') && end > i + 1 {
            out.push("डॉट");
        }
        out.push(word);
        i = end;
    }
    Some(out.join(" "))
}

fn url_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || is_digit(c)
        || ('₀'..='₉').contains(&c)
        || "._-/#?&=%+:".contains(c)
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// A word NeMo reads as an electronic form: web address, e-mail, IP address, path, domain,
/// file name, Latin word or code.
pub(super) fn electronic(w: &str) -> Option<String> {
    let phonetic = [SERVERS, COMMON];
    for (start, spoken) in [
        (
            "https://www.",
            "एच टी टी पी एस कोलन फॉरवर्ड स्लैश फॉरवर्ड स्लैश डब्ल्यू डब्ल्यू डब्ल्यू डॉट",
        ),
        (
            "http://www.",
            "एच टी टी पी कोलन फॉरवर्ड स्लैश फॉरवर्ड स्लैश डब्ल्यू डब्ल्यू डब्ल्यू डॉट",
        ),
        ("https://", "एच टी टी पी एस कोलन फॉरवर्ड स्लैश फॉरवर्ड स्लैश"),
        ("http://", "एच टी टी पी कोलन फॉरवर्ड स्लैश फॉरवर्ड स्लैश"),
        ("www.", "डब्ल्यू डब्ल्यू डब्ल्यू डॉट"),
    ] {
        if let Some(rest) = w
            .strip_prefix(start)
            .filter(|r| !r.is_empty() && r.chars().all(url_char))
        {
            return Some(format!("{spoken} {}", spell(rest, &phonetic, true)?));
        }
    }
    if let Some((user, domain)) = w.split_once('@') {
        let user_ok = !user.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        let domain_ok = !domain.is_empty()
            && domain
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c));
        if user_ok && domain_ok {
            return Some(format!(
                "{} एट {}",
                spell(user, &phonetic, false)?,
                spell(domain, &phonetic, true)?
            ));
        }
        return None;
    }
    let octets: Vec<&str> = w.split('.').collect();
    if octets.len() == 4
        && octets
            .iter()
            .all(|o| (1..=3).contains(&o.len()) && o.bytes().all(|b| b.is_ascii_digit()))
    {
        return spell(w, &[], false);
    }
    if w.len() > 1
        && w.starts_with('/')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || is_digit(c) || "/.-_$".contains(c))
    {
        return spell(w, &[COMMON], false);
    }
    let body = w.strip_suffix('/').unwrap_or(w);
    let parts: Vec<&str> = body.split('.').collect();
    let is_tld = |p: &str| table(DOMAINS).any(|(k, _)| k == p);
    let domain = parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(name_char))
        && (is_tld(parts[parts.len() - 1])
            && (parts.len() == 2 || !parts[..parts.len() - 1].is_empty()));
    let file = parts.len() == 2
        && parts[0]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
        && !parts[0].is_empty()
        && table(EXTENSIONS).any(|(k, _)| k == parts[1]);
    if domain || (file && body == w) {
        return spell(w, &phonetic, true);
    }
    let mut chars = w.chars();
    let chemical = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && w.chars().count() >= 2
        && chars.all(|c| c.is_ascii_alphabetic() || ('₀'..='₉').contains(&c));
    let code = w
        .split('-')
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric()))
        && w.chars().any(|c| c.is_ascii_alphabetic())
        && w.chars().any(|c| c.is_ascii_digit());
    if chemical || code {
        return spell(w, &phonetic, true);
    }
    None
}
