#!/usr/bin/env python3
"""Writes testdata/magpie/tokenizer_zh.json: NeMo 3.0.0's own Mandarin front end (ChineseG2p +
ChinesePhonemesTokenizer, configured as the v2602 checkpoint's `mandarin_phoneme`) on everyday
sentences (news, chat, digits, Latin letters, every punctuation mark, polyphonic characters,
long texts) and seeded random mixes. Read by crates/rill-text/tests/mandarin.rs.

    python3 -m venv venv && venv/bin/pip install jieba==0.42.1 pypinyin==0.55.0 pypinyin-dict==0.9.0
    pip download nemo_toolkit==3.0.0 --no-deps -d .
    venv/bin/python testdata/magpie/make_tokenizer_zh.py --wheel nemo_toolkit-3.0.0-py3-none-any.whl \
        --dict crates/rill-text/data/ipa_dict_nv23.05.txt

The reference is upstream code, unmodified, read from the nemo_toolkit 3.0.0 wheel:
`g2p/models/zh_cn_pinyin.py` (ChineseG2p), `g2p/models/base.py`, `g2p/utils.py`,
`tts_tokenizers.py` (ChinesePhonemesTokenizer), `ipa_lexicon.py`, `tokenizer_utils.py`;
`nemo.utils.logging`, `omegaconf`, `packaging`, `tokenizers` and `transformers` are stubbed (only
names other tokenizers of the module use). jieba, pypinyin and pypinyin-dict are the real pinned
packages. Config, as v2602's `mandarin_phoneme`: punct true, apostrophe true, pad_with_space true;
g2p phoneme_dict ipa_dict_nv23.05.txt, word_segmenter jieba, phoneme_prefix "", phoneme_case lower,
tone_prefix "#", ascii_letter_prefix "", ascii_letter_case upper.

Per text: `words` = `jieba.lcut(text.upper())` (what ChineseG2p segments), `pinyin` = the
`lazy_pinyin` output of each word, `g2p` = ChineseG2p's output, `ids` = the tokenizer's `encode`,
**relative to the zh table** (add 349, the offset of `mandarin_phoneme` in v2602's aggregate,
and EOS 2361 for model input); `split` = `LanguageThresholds().exceeds_threshold(text, "zh")`
and, when true, `sentences` = `split_by_sentence(text, language="zh")` with each one's ids
(tts_dataset_utils.py's functions, taken out by make_tokenizer_langs.py's `build_tree`). `tokens` is the 109-symbol table, `token2id` its dict, `re_hans` the code point
ranges pypinyin's RE_HANS matches (scanned over all of Unicode).
"""
import argparse
import json
import logging
import pathlib
import random
import sys
import tempfile
import unicodedata

import make_tokenizer_langs

HERE = pathlib.Path(__file__).resolve().parent
FILES = [
    'nemo/collections/common/tokenizers/text_to_speech/ipa_lexicon.py',
    'nemo/collections/common/tokenizers/text_to_speech/tokenizer_utils.py',
    'nemo/collections/common/tokenizers/text_to_speech/tts_tokenizers.py',
    'nemo/collections/common/tokenizers/tokenizer_spec.py',
    'nemo/collections/tts/g2p/models/zh_cn_pinyin.py',
    'nemo/collections/tts/g2p/models/base.py',
    'nemo/collections/tts/g2p/utils.py',
]
STUBS = {
    'nemo/utils/__init__.py': 'import logging as _logging\nlogging = _logging.getLogger("nemo")\n',
    'omegaconf/__init__.py': ('import contextlib\n@contextlib.contextmanager\n'
                              'def open_dict(cfg):\n    yield cfg\n'),
    'packaging/__init__.py': '',
    'packaging/version.py': 'class InvalidVersion(Exception):\n    pass\nclass Version:\n    pass\n',
    'tokenizers/__init__.py': 'class Tokenizer:\n    pass\n',
    'transformers/__init__.py': 'class PreTrainedTokenizerBase:\n    pass\n',
}

SENTENCES = [
    # everyday, chat
    '你好，世界。', '你好！', '我很好，谢谢。你呢？', '今天天气怎么样？', '今天天气很好，我们去公园散步吧。',
    '你吃饭了吗？', '我想喝一杯咖啡。', '请问洗手间在哪里？', '这个多少钱？', '太贵了，便宜一点吧！',
    '我不知道他去哪儿了。', '明天见！', '祝你生日快乐！', '新年快乐，万事如意。', '对不起，我来晚了。',
    '没关系。', '你会说中文吗？', '我会说一点儿。', '他是我的好朋友。', '我们一起去看电影吧。',
    '哈哈哈，太好笑了！', '嗯……让我想一想。', '真的吗？！', '好的，没问题。', '等一下，我马上就来。',
    '你叫什么名字？', '我叫李明，来自北京。', '很高兴认识你。', '我家有四口人：爸爸、妈妈、哥哥和我。',
    '周末你打算做什么？', '我喜欢听音乐、看书和跑步。', '这道菜有点儿辣。', '服务员，买单！',
    # news
    '国务院总理今天在北京会见了来访的外国代表团。', '据新华社报道，今年我国粮食产量再创新高。',
    '中国人民银行宣布下调存款准备金率零点五个百分点。', '上海证券交易所综合指数今天上涨了百分之一。',
    '气象台预计，未来三天华北地区将有大到暴雨。', '这次会议的主要议题是经济发展和环境保护。',
    '科学家们在南极发现了一种新的微生物。', '世界卫生组织呼吁各国加强合作，共同应对疫情。',
    '北京时间昨晚，中国队以三比一战胜对手，晋级决赛。', '该公司第三季度营业收入同比增长百分之十二。',
    '教育部发布通知，要求减轻中小学生课业负担。', '铁路部门将在春运期间增开临时旅客列车。',
    # numbers as digits
    '我今年25岁。', '现在是下午3点45分。', '2026年12月6日，星期日。', '他的电话号码是13812345678。',
    '这本书的价格是39.99元。', '温度降到了-5℃。', '第1名和第2名相差0.5秒。', '人口超过14亿。',
    '增长了12.5%。', '1+1=2', '房间号是302，在3楼。', '我有100块钱，你有50块。', '公元前221年，秦统一六国。',
    '100', '0', '6789', '3.14159', '一二三四五六七八九十', '零', '第一百零八', '两千零二十六年',
    # Latin letters mixed in
    '我今天去了Apple Store，买了一个iPhone。', '我用Python写代码。', 'AI技术发展很快。',
    '他在NVIDIA工作。', '我们用GPU训练模型。', '请发email给我。', 'OK，没问题。', 'WiFi密码是多少？',
    '我喜欢看NBA比赛。', '这是一个APP。', 'T恤衫', '卡拉OK', 'B超检查', 'X光片', 'U盘', 'Hello，世界！',
    'hello world', 'ABC', 'abc', 'A', 'iPad Pro 12.9英寸', '3D打印技术', 'C++和C#都是编程语言。',
    'PM2.5指数很高。', 'MP3播放器', 'QQ号码', 'CEO和CTO开会。', 'USB-C接口', 'Wi-Fi 6E',
    "I'm fine, thank you.", "don't worry", 'Straße', 'café', 'naïve résumé',
    # punctuation of every kind
    '“你好，”他说，“欢迎光临！”', '‘单引号’和“双引号”', '（括号）和【方括号】', '「直角引号」和《书名号》',
    '他读过《红楼梦》、《西游记》和《水浒传》。', '注意：明天；后天、大后天。', '真的？真的！',
    '你好,世界.', '你好!世界?', '(英文括号) [方括号] {花括号}', '"英文引号"', "'single'", '斜线/分隔',
    '破折号——就是这个', '省略号……', '间隔号·', '波浪号～', '百分号%和井号#', '与&符号', '下划线_',
    '连字符-', '邮箱a.b@c.com', '网址https://www.example.com/路径', '……', '。。。', '？！', '', ' ', '　',
    '中\t文\n换行', '中文\r\n换行', '  前后空格  ', '全角空格　在这里', 'Ａ Ｂ Ｃ １２３',
    # polyphonic characters
    '银行行长走在人行道上。', '他长大后长得很高。', '这件事很重要，请重新做一遍。', '我吃了饭了。', '了解了解。',
    '他跑得很快，你得快点。', '我得到了一个好消息。', '他的的确确是个好人。', '目的地到了。',
    '音乐让人快乐。', '重庆的火锅很有名。', '重量是五公斤。', '还要还书吗？', '数一数有多少数。',
    '这个地方很好玩，地上很干净。', '他背着背包。', '着急也没用，他睡着了。', '我觉得睡觉很重要。',
    '调查发现他调走了。', '教书的人教学生。', '朝阳在朝鲜。', '都市人都在忙。', '便宜又方便。',
    '处理问题的处所。', '差不多，出差，参差不齐。', '长城很长。', '好学的人爱好读书。', '会计会来开会。',
    '一个人，一群人，一样，一定，统一。', '不去，不对，不好。', '东西在东边和西边。',
    # misc
    '〇', '㐀', '𠀀𠀁', '\ue815', '丽', '繁體中文的句子，測試一下。', '台灣、香港、澳門。', '日本語のテキスト',
    '한국어', 'Русский текст', '😀表情符号😂', '中文English混合Mixed', '声调：mā má mǎ mà ma',
    'ü和v：女 绿 略', '儿化音：一会儿，玩儿，哪儿', '嗯', '呣', '哼', '欸', '噢', '唔',
    '他说：“我明天——如果天气好的话——就去。”', '「你好」『世界』〈书〉〔注〕',
]

LONG = [
    '中华人民共和国成立于1949年10月1日，首都是北京。中国是世界上人口最多的国家之一，拥有悠久的历史和灿烂的文化。'
    '长江和黄河是中国最重要的两条河流，它们孕育了中华文明。',
    '人工智能（AI）正在改变我们的生活：从智能手机上的语音助手，到自动驾驶汽车，再到医疗诊断系统。'
    '专家预测，到2030年，AI将为全球经济贡献超过15万亿美元！但是，我们也需要关注隐私、安全和就业等问题。',
    '小明早上七点起床，刷牙、洗脸、吃早饭，然后骑自行车去学校。上午有语文、数学和英语课；下午有体育课和音乐课。'
    '放学后，他和同学们一起在操场上踢足球，直到天黑才回家。',
]

HANZI = ('的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面'
         '而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好'
         '应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命'
         '此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头'
         '基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治'
         '北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车'
         '例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且'
         '究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除'
         '消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局'
         '照参红细引听该铁价严龙飞')
PUNCT = list('，。？！；：、‘’“”（）【】「」《》') + list(',.!?-:;/"()[]{}') + ['……', '——', '～', '·', '%', '#', '&',
                                                                             "'", '_', '+', '=', '@', '*', '^', '~']
EXTRA = [' ', ' ', '  ', '\t', '\n', '\r\n', '\u3000', '\u00a0', '3', '42', '3.14', '2026', '12.5%', '0', '6', '789',
         'A', 'abc', 'XYZ', 'iPhone', 'GPU', 'Wi-Fi', 'C++', "I'm", 'ß', 'é', 'ü', 'Ａ', '１', '😀', '\x00', '〇',
         '㐀', '𠀀', '\ue815', '丽', 'ㄅ', 'あ', 'カ', '한', 'ж', 'ə', 'ʂ']


def random_texts(n, seed, words):
  rng = random.Random(seed)

  def piece():
    r = rng.random()
    if r < 0.35:
      return rng.choice(words)
    if r < 0.6:
      return ''.join(rng.choice(HANZI) for _ in range(rng.randrange(1, 6)))
    if r < 0.75:
      return rng.choice(PUNCT)
    if r < 0.8:
      while True:
        c = chr(rng.choice([rng.randrange(0x20, 0x3000), rng.randrange(0x3000, 0xA000),
                            rng.randrange(0xF900, 0xFB00), rng.randrange(0x20000, 0x2A6E0),
                            rng.randrange(0x1F300, 0x1F700)]))
        if unicodedata.category(c) not in ('Cn', 'Cs'):
          return c
    return rng.choice(EXTRA)

  texts = []
  for _ in range(n):
    texts.append(''.join(piece() for _ in range(rng.randrange(1, 30))))
  return texts


ODD = ['ß', 'ﬁ', 'ŉ', 'ǰ', 'ΐ', 'ａｂｃ', 'Ｘ', 'ı', 'İ', 'ǅ', 'µ', 'ÿ', '\x1c', '\x85', '\u2028', '\u200b',
       '\ufeff', '\r', '\r\n', 'V1.2.3', '3.14%', 'ABC123.45%', 'a+b#c&d_e%f-g', '..', '%%', '-1', 'x.5', '2.x',
       'ＡＩ', '１２３', '①', '²', '٣', '五', '〇〇', '\u9fd6', '\u9fff', '\u9fd5', '\u4e00']


def random_texts2(n, seed, words, phrases):
  """Runs that stress the segmenters: pypinyin phrases and their prefixes glued together,
  rare characters (jieba's HMM), Latin/digit runs inside Han text, odd case mappings."""
  rng = random.Random(seed)

  def piece():
    r = rng.random()
    if r < 0.3:
      p = rng.choice(phrases)
      return p if rng.random() < 0.6 else p[:rng.randrange(1, len(p) + 1)]
    if r < 0.45:
      return rng.choice(words)
    if r < 0.65:
      return ''.join(chr(rng.randrange(0x4E00, 0x9FD6)) for _ in range(rng.randrange(1, 8)))
    if r < 0.72:
      return chr(rng.choice([rng.randrange(0x3400, 0x4DC0), rng.randrange(0x20000, 0x2A6E0),
                             rng.randrange(0x9FD6, 0xA000), rng.randrange(0xF900, 0xFB00)]))
    if r < 0.85:
      return rng.choice(ODD + EXTRA)
    return rng.choice(PUNCT)

  texts = []
  for k in range(n):
    m = rng.randrange(1, 40) if k % 10 else rng.randrange(60, 200)
    texts.append(''.join(piece() for _ in range(m)))
  return texts


def re_hans_ranges():
  from pypinyin.constants import RE_HANS
  ranges, start = [], None
  for cp in range(0x110000 + 1):
    hit = cp < 0x110000 and not (0xD800 <= cp < 0xE000) and RE_HANS.match(chr(cp)) is not None
    if hit and start is None:
      start = cp
    elif not hit and start is not None:
      ranges.append([start, cp - 1])
      start = None
  return ranges


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument('--wheel', required=True, type=pathlib.Path, help='nemo_toolkit-3.0.0 wheel')
  ap.add_argument('--dict', required=True, type=pathlib.Path, help='ipa_dict_nv23.05.txt')
  ap.add_argument('--out', default=str(HERE / 'tokenizer_zh.json'))
  a = ap.parse_args()
  logging.disable(logging.CRITICAL)  # NeMo logs every dropped syllable and symbol
  import jieba
  jieba.setLogLevel(logging.CRITICAL)
  import pypinyin
  from pypinyin import Style, lazy_pinyin
  with tempfile.TemporaryDirectory() as tmp:
    make_tokenizer_langs.write_tree(a.wheel, pathlib.Path(tmp), FILES, STUBS)
    sys.path.insert(0, tmp)
    from nemo.collections.tts.g2p.models.zh_cn_pinyin import ChineseG2p
    from nemo.collections.common.tokenizers.text_to_speech.tts_tokenizers import ChinesePhonemesTokenizer
    g2p = ChineseG2p(phoneme_dict=str(a.dict), word_segmenter='jieba', phoneme_prefix='', phoneme_case='lower',
                     tone_prefix='#', ascii_letter_prefix='', ascii_letter_case='upper')
    tok = ChinesePhonemesTokenizer(g2p, punct=True, apostrophe=True, pad_with_space=True)
    assert len(tok.tokens) == 109, len(tok.tokens)

    # NeMo's sentence splitting and thresholds, taken out of tts_dataset_utils.py as
    # make_tokenizer_langs.py does.
    sys.path.insert(0, str(HERE))
    split_scope = make_tokenizer_langs.build_tree(a.wheel, pathlib.Path(tmp) / 'split')
    split = split_scope['split_by_sentence']
    thresholds = split_scope['LanguageThresholds']()

    def run(text):
      up = text.upper()
      words = jieba.lcut(up)
      pinyin = [lazy_pinyin(w, style=Style.TONE3, neutral_tone_with_five=True, errors=lambda s: list(s))
                for w in words]
      row = dict(text=text, words=words, pinyin=pinyin, g2p=g2p(text), ids=tok.encode(text))
      row['split'] = thresholds.exceeds_threshold(text, 'zh')
      if row['split']:
        row['sentences'] = [dict(text=s, ids=tok.encode(s)) for s in split(text, language='zh')]
      return row

    jieba.initialize()
    rng = random.Random(4242)
    dict_words = sorted(w for w, f in jieba.dt.FREQ.items() if f > 0)
    sample = [rng.choice(dict_words) for _ in range(3000)]
    from pypinyin.constants import PHRASES_DICT
    phrases = sorted(PHRASES_DICT)
    fixed = SENTENCES + LONG + [''.join(SENTENCES[:60]), ' '.join(SENTENCES[60:140])]
    out = dict(description=__doc__, offset=349, size=len(tok.tokens), tokens=list(tok.tokens),
               token2id=dict(tok._token2id), re_hans=re_hans_ranges(),
               versions=dict(jieba=jieba.__version__, pypinyin=pypinyin.__version__),
               sentences=[run(t) for t in fixed],
               random=[run(t) for t in random_texts(250, 8000, sample)]
               + [run(t) for t in random_texts2(350, 8001, sample, phrases)])
    pathlib.Path(a.out).write_text(make_tokenizer_langs.rows_per_line(out), encoding='utf-8')
    print('wrote', a.out, len(out['sentences']), 'fixed +', len(out['random']), 'random texts')


if __name__ == '__main__':
  main()
