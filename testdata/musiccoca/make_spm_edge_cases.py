"""Writes spm_edge_cases.json: hand-built SentencePiece models (protobuf edge cases: unknown
or repeated fields, out-of-range enum values, merged messages, NUL and invalid UTF-8 in
pieces, byte pieces, user-defined prefixes, malformed wire format) with what sentencepiece
0.2.1 does with each: the error it refuses the model with, or the ids of a few texts.

Usage: python make_spm_edge_cases.py DIR   (the oracle's venv; each model is loaded in a
subprocess, since a bad one could abort sentencepiece)
"""
import json
import subprocess
import sys

def varint(n):
    out=b''
    while True:
        b=n&0x7f; n>>=7
        if n: out+=bytes([b|0x80])
        else: return out+bytes([b])
def tag(f,w): return varint(f<<3|w)
def ld(f,p): return tag(f,2)+varint(len(p))+p
def piece(s,t=None,score=None,extra=b''):
    m=ld(1,s)
    if score is not None:
        import struct; m+=tag(2,5)+struct.pack('<f',score)
    if t is not None: m+=tag(3,0)+varint(t)
    return ld(1,m+extra)
U=piece(b'<unk>',2)
A=piece(b'a',1,-1.0)+piece(b'b',1,-2.0)+piece(b'ab',1,-2.5)+piece('▁'.encode(),1,-3.0)+piece('▁a'.encode(),1,-1.5)
cases = {
 'plain': U+A,
 'type_as_bytes': U+A+piece(b'c',None,-1.0,ld(3,b'\x04')),
 'type_invalid_0': U+A+piece(b'c',0,-1.0),
 'type_invalid_big': U+A+piece(b'c',2**40+4,-1.0),
 'type_neg': U+A+piece(b'c',2**64-1,-1.0),
 'type_twice': U+A+piece(b'c',4,-1.0,tag(3,0)+varint(9)),
 'type_twice2': U+A+piece(b'cc',5,-1.0,tag(3,0)+varint(1)),
 'score_varint': U+A+piece(b'c',1,None,tag(2,0)+varint(5)),
 'score_fixed64': U+A+piece(b'c',1,-1.0,tag(2,1)+b'\0'*8),
 'model_type_7': U+A+ld(2,tag(3,0)+varint(7)),
 'model_type_bpe': U+A+ld(2,tag(3,0)+varint(2)),
 'model_type_bpe_then_uni': U+A+ld(2,tag(3,0)+varint(2))+ld(2,tag(3,0)+varint(1)),
 'trainer_merge': U+A+ld(2,tag(24,0)+varint(1))+ld(2,tag(3,0)+varint(1)),
 'normalizer_merge': U+A+ld(3,tag(3,0)+varint(0))+ld(3,tag(4,0)+varint(0)),
 'normalizer_bool_big': U+A+ld(3,tag(3,0)+varint(256)),
 'unknown_fields': U+A+tag(9,0)+varint(3)+tag(10,1)+b'\0'*8+tag(11,5)+b'\0'*4+ld(12,b'zz')+tag(13,3)+tag(1,0)+varint(1)+tag(13,4),
 'pieces_as_varint': U+A+tag(1,0)+varint(3),
 'selftest_bad': U+A+ld(4,ld(1,b'\xff')),
 'selftest_ok_empty': U+A+ld(4,b''),
 'denorm_bad': U+A+ld(5,b'\x0f'),
 'trainer_bad': U+A+ld(2,b'\x0f'),
 'invalid_utf8_piece': U+A+piece(b'\xff\xfe',1,-1.0),
 'nul_control': U+A+piece(b'<c\0x>',3),
 'nul_normal': U+A+piece(b'c\0',1,-1.0),
 'dup_normal_user': U+A+piece(b'a',4),
 'dup_normal_control': U+A+piece(b'a',3),
 'unk_also_normal': U+A+piece(b'<unk>',1,-1.0),
 'unused_only': U+piece(b'a',5),
 'user_only': U+piece(b'a',4),
 'control_only': U+piece(b'a',3),
 'byte_pieces_normal_type': U+A+piece(b'<0x41>',1,-1.0),
 'byte_lower_hex': U+A+ld(2,tag(35,0)+varint(1))+b''.join(piece(('<0x%02x>'%i).encode(),6) for i in range(256)),
 'byte_upper_hex': U+A+ld(2,tag(35,0)+varint(1))+b''.join(piece(('<0x%02X>'%i).encode(),6) for i in range(256)),
 'tag_field0': U+A+b'\x00\x01',
 'trailing_garbage': U+A+b'\x0a\x05ab',
 'ud_space': U+A+piece('x y'.encode(),4)+piece(' '.encode(),4),
 'ud_prefixes': U+A+piece(b'ab',4)+piece(b'abc',4)+piece(b'abcd',4),
 'ud_mark': U+A+piece('▁▁'.encode(),4),
 'all_positive': U+piece(b'a',1,5.0)+piece(b'b',1,3.0)+piece(b'ab',1,7.0)+piece(b'x',4),
}
TEXTS = ["a", "ab", "abc", "abcd", "ba", "x y", "a b", "  ab  ba ", "aab", "c", "cc", "\xff",
         "a\x00b", "A", "\u00e9", "<unk>", "<c", "\u2581\u2581a", "x", "xx y", "3 ab"]

LOAD = """import json, sys
import sentencepiece as spm
b = bytes.fromhex(sys.argv[1])
try:
    sp = spm.SentencePieceProcessor(model_proto=b)
except Exception as e:
    print(json.dumps({"error": str(e).strip().splitlines()[-1][-100:]}))
    sys.exit()
print(json.dumps({"ids": [sp.EncodeAsIds(t) for t in json.loads(sys.argv[2])]}))
"""


def main():
    out = []
    for name, b in cases.items():
        r = subprocess.run([sys.executable, "-c", LOAD, b.hex(), json.dumps(TEXTS)],
                           capture_output=True, check=True)
        out.append({"name": name, "model_hex": b.hex(), **json.loads(r.stdout)})
    json.dump({"texts": TEXTS, "models": out}, open(f"{sys.argv[1]}/spm_edge_cases.json", "w"),
              indent=0)


if __name__ == "__main__":
    main()
