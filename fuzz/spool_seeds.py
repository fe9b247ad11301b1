#!/usr/bin/env python3
"""Writes the seed corpus of the spool_record fuzz target (corpus/spool_record/):
append spool files in the record format of
services/orchestrator/downstream/spool_record.h, sound and damaged."""
import os, struct, zlib
def varint(n):
    out=b''
    while True:
        b=n&0x7f; n>>=7
        if n: out+=bytes([b|0x80])
        else: return out+bytes([b])
def field_str(num, s):
    s=s.encode() if isinstance(s,str) else s
    return varint(num<<3|2)+varint(len(s))+s
def field_var(num, v): return varint(num<<3)+varint(v)
def request(conv, role, content, key='', meta=b'', meta_json=''):
    r=field_str(1,conv)+field_var(2,role)+field_str(3,content)
    if meta: r+=field_str(4,meta)
    if key: r+=field_str(5,key)
    if meta_json: r+=field_str(6,meta_json)
    return r
def lp(b): b=b.encode() if isinstance(b,str) else b; return struct.pack('<I',len(b))+b
def record(number, tenant, user, message, key_id=None):
    p=struct.pack('<Q',number)+lp(tenant)+lp(user)
    if key_id is not None: p+=lp(key_id)
    p+=lp(message)
    return struct.pack('<II',len(p),zlib.crc32(p))+p
r1=record(1,'acme','alice',request('0f8fad5b-d9cb-469f-a165-70867728950e',1,'Book a meeting with Bob tomorrow at 10','idem-1'))
r2=record(2,'acme','alice',request('0f8fad5b-d9cb-469f-a165-70867728950e',2,'Done: Standup, Tue 10:00','idem-2',meta_json='{"tool_call_id":"call_1"}'))
r3=record(3,'globex','bob',request('7c9e6679-7425-40de-944b-e07cc4fd8b11',1,'r\u00e9sum\u00e9 \U0001F600','idem-3'))
# A Struct {"fields": {"route": string_value "calendar"}}
struct_meta=field_str(1, field_str(1,'route')+field_str(2, field_str(3,'calendar')))
r4=record(4,'acme','carol',request('c1',1,'with metadata','idem-4',meta=struct_meta))
sealed=record(5,'acme','alice',bytes(range(24))+b'sealed message bytes, not openable'+bytes(range(100,116)),key_id='master-2026')
seeds={
 'one_record': r1,
 'three_records': r1+r2+r3,
 'struct_metadata': r4,
 'sealed_record': sealed,
 'cut_short_at_end': r1+r2[:len(r2)//2],
 'damaged_in_middle': r1+r2[:10]+b'\xff'+r2[11:]+r3,
 'bad_crc': r1[:4]+b'\0\0\0\0'+r1[8:],
 'garbage_between': r1+b'\x00\x00\x00\x00\x01\x02\x03'+r3,
 'empty_payload_zero_crc': b'\0'*16,
 'length_beyond_limit': struct.pack('<II',(1<<20)+1,0)+b'x'*32,
 'not_a_message': record(6,'acme','alice',b'\xff\xff\xff\xff'),
 'empty_identity': record(7,'','',b''),
}
out=os.path.join(os.path.dirname(os.path.abspath(__file__)),'corpus','spool_record')
for name,data in seeds.items():
    with open(os.path.join(out,name),'wb') as f:
        f.write(data)
