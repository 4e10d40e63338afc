#!/usr/bin/env python3
"""miss-overlap.py BIN CORPORA: for the dev half of each corpus (FNV-32a(id) mod 3 != 0, the
tuning part), rank every answerable request with BIN (rank --batch --k 5) and report the share
of hits and of misses (no relevant tool in the top 5) whose request shares no content word
with any relevant tool's name, description and keywords (lower case, words of 3 letters or
more, a short stop list, crude suffix stripping). A miss with no shared word is one only the
dense side could have found."""
import json, subprocess, os, re, sys, glob
STOP=set("""a an the and or of to in on for with by from at as is are be was were it its this that these those i me my we our you your he she they them their can could would should will shall may might must do does did done have has had having please help need want like get make use using using find show tell give know let also any all some about into over under than then there here what which who whom whose when where why how not no yes just only very more most such own same so too out up down off again further once both each few other nor now while because until if else am been being ai api tool tools""".split())
def stem(w):
    for suf in ("ing","ies","es","ed","s"):
        if w.endswith(suf) and len(w)-len(suf)>=3:
            return w[:-len(suf)]
    return w
def toks(s):
    s=re.sub(r"([a-z])([A-Z])", r"\1 \2", s)
    return {stem(w) for w in re.findall(r"[a-z]{3,}", s.lower().replace("_"," ")) if w not in STOP}
def fnv(s):
    h=0x811c9dc5
    for b in s.encode():
        h^=b; h=(h*0x01000193)&0xffffffff
    return h
BIN, base = sys.argv[1], os.path.realpath(sys.argv[2])
tot={"hit":[0,0],"miss":[0,0]}
for corp in sorted(os.listdir(base)):
    d=f"{base}/{corp}"
    if not os.path.isdir(d): continue
    tooltext={}
    for f in glob.glob(f"{d}/tools/*.meta"):
        m=json.load(open(f)); n=os.path.basename(f)[:-5]
        tooltext[n]=toks(n+" "+m.get("description","")+" "+" ".join(m.get("keywords",[]) or []))
    qs=[json.loads(l) for l in open(f"{d}/queries.jsonl")]
    qs=[q for q in qs if fnv(q["id"])%3!=0 and q["relevant"]]
    inp="\n".join(json.dumps({"id":q["id"],"query":q["query"]}) for q in qs)
    p=subprocess.run([BIN,"rank","--tools",f"{d}/tools","--batch","-","--k","5"],input=inp,capture_output=True,text=True)
    res={json.loads(l)["id"]:[r["name"] for r in json.loads(l)["ranked"]] for l in p.stdout.splitlines()}
    c={"hit":[0,0],"miss":[0,0]}
    for q in qs:
        k="hit" if set(res[q["id"]])&set(q["relevant"]) else "miss"
        qt=toks(q["query"])
        ov=max(len(qt & tooltext.get(r,set())) for r in q["relevant"])
        c[k][0]+=1; c[k][1]+= (ov==0)
    for k in c: tot[k][0]+=c[k][0]; tot[k][1]+=c[k][1]
    print(f"{corp:15s} hits {c['hit'][0]:5d} no-overlap {c['hit'][1]/max(1,c['hit'][0]):.2f} | misses {c['miss'][0]:5d} no-overlap {c['miss'][1]/max(1,c['miss'][0]):.2f}")
print(f"{'all':15s} hits {tot['hit'][0]:5d} no-overlap {tot['hit'][1]/tot['hit'][0]:.2f} | misses {tot['miss'][0]:5d} no-overlap {tot['miss'][1]/tot['miss'][0]:.2f}")
