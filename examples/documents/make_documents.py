"""Write de.jsonl and en.jsonl: short news-like documents, written for bitextmine (see LICENSE.md).

Five stories are told in both languages (the German as a translation of the English), three
in German only and three in English only. de.jsonl also holds an English story (language ID
drops it), a copy of a German story under another URL (deduplication drops it) and a page
footer (boilerplate). Run it again after editing the stories: python make_documents.py
"""

import json
from pathlib import Path

BOTH = [
    ("bridge",
     "The old railway bridge over the Lenne river will close for repairs on Monday. Engineers found cracks in two of "
     "its steel arches during an inspection in March. The work is expected to take eleven weeks and to cost about "
     "four million euros. Trains between Altena and Werdohl will be replaced by buses during that time. The city "
     "council asked the railway company to keep the footpath beside the tracks open. A decision on the footpath "
     "will be made next week.",
     "Die alte Eisenbahnbrücke über die Lenne wird am Montag für Reparaturen gesperrt. Ingenieure haben bei einer "
     "Prüfung im März Risse in zwei ihrer Stahlbögen gefunden. Die Arbeiten sollen elf Wochen dauern und etwa vier "
     "Millionen Euro kosten. Die Züge zwischen Altena und Werdohl werden in dieser Zeit durch Busse ersetzt. Der "
     "Stadtrat bat die Bahngesellschaft, den Fußweg neben den Gleisen offen zu halten. Über den Fußweg wird in der "
     "nächsten Woche entschieden."),
    ("library",
     "The public library in Neustadt has opened a new reading room for children. The room has space for forty "
     "readers and more than three thousand books. Volunteers will read stories aloud every Saturday morning. The "
     "library also lends tablets to pupils who have no computer at home. Its director said that the number of young "
     "visitors has doubled since last year.",
     "Die Stadtbibliothek in Neustadt hat einen neuen Lesesaal für Kinder eröffnet. Der Raum bietet Platz für "
     "vierzig Leser und mehr als dreitausend Bücher. Ehrenamtliche Helfer lesen jeden Samstagmorgen Geschichten "
     "vor. Die Bibliothek verleiht außerdem Tablets an Schüler, die zu Hause keinen Computer haben. Ihre Leiterin "
     "sagte, die Zahl der jungen Besucher habe sich seit dem letzten Jahr verdoppelt."),
    ("storm",
     "A heavy storm caused damage across the north of the region on Tuesday night. Fallen trees blocked several "
     "roads, and thousands of households were without electricity for hours. The fire brigade was called out more "
     "than two hundred times. Nobody was seriously injured. The weather service expects calmer weather for the "
     "rest of the week.",
     "Ein schweres Unwetter hat in der Nacht zum Mittwoch im Norden der Region Schäden angerichtet. Umgestürzte "
     "Bäume blockierten mehrere Straßen, und Tausende Haushalte waren stundenlang ohne Strom. Die Feuerwehr rückte "
     "mehr als zweihundert Mal aus. Niemand wurde schwer verletzt. Der Wetterdienst erwartet für den Rest der Woche "
     "ruhigeres Wetter."),
    ("market",
     "The weekly farmers' market will move to the cathedral square from the first of May. Traders had complained "
     "that the old site was too small and too far from the bus station. The new site has room for sixty stalls. "
     "The market will open at seven in the morning and close at one in the afternoon. Parking near the square "
     "will be free on market days.",
     "Der Wochenmarkt zieht ab dem ersten Mai auf den Domplatz um. Die Händler hatten sich beschwert, der alte "
     "Platz sei zu klein und zu weit vom Busbahnhof entfernt. Auf dem neuen Platz ist Raum für sechzig Stände. "
     "Der Markt öffnet um sieben Uhr morgens und schließt um ein Uhr mittags. Das Parken in der Nähe des Platzes "
     "ist an Markttagen kostenlos."),
    ("choir",
     "The town's youth choir won first prize at a national competition in Leipzig. Thirty-two singers between "
     "twelve and eighteen years old took part. The jury praised their clear voices and their difficult program. "
     "The choir will give a free concert in the town hall on Sunday evening. Tickets are not needed, but seats "
     "are limited.",
     "Der Jugendchor der Stadt hat bei einem bundesweiten Wettbewerb in Leipzig den ersten Preis gewonnen. "
     "Zweiunddreißig Sängerinnen und Sänger zwischen zwölf und achtzehn Jahren nahmen teil. Die Jury lobte ihre "
     "klaren Stimmen und ihr schwieriges Programm. Der Chor gibt am Sonntagabend ein kostenloses Konzert im "
     "Rathaus. Karten sind nicht nötig, aber die Plätze sind begrenzt."),
]
GERMAN_ONLY = [
    ("pool", "Das Hallenbad bleibt wegen eines Wasserschadens bis zum Herbst geschlossen. Die Stadtwerke prüfen, ob "
             "die Leitungen unter dem Becken ersetzt werden müssen. Schulklassen können in der Zwischenzeit das Bad "
             "im Nachbarort nutzen. Die Kosten für die Busfahrten übernimmt die Stadt."),
    ("bakery", "Eine Bäckerei in der Altstadt feiert ihr hundertjähriges Bestehen. Sie wird seit vier Generationen "
               "von derselben Familie geführt. Zum Jubiläum gibt es am Samstag Kuchen nach einem Rezept der "
               "Urgroßmutter. Der Erlös geht an den örtlichen Tierschutzverein."),
    ("cycling", "Der Radweg entlang des Kanals wird um zwölf Kilometer verlängert. Damit sind die beiden größten "
                "Gewerbegebiete der Stadt erstmals sicher mit dem Fahrrad zu erreichen. Die Bauarbeiten beginnen "
                "im Juni. Anwohner werden gebeten, in dieser Zeit auf die Umleitungen zu achten."),
]
ENGLISH_ONLY = [
    ("museum", "The city museum has received a collection of old maps from a private owner. The oldest map shows "
               "the region as it was in 1620. Experts will spend the summer restoring the fragile paper. An "
               "exhibition of the maps is planned for next spring."),
    ("hospital", "The district hospital has hired twelve new nurses after a long search. The hospital had closed "
                 "one of its wards last winter because of staff shortages. The ward will reopen at the start of "
                 "next month. Patients from the surrounding villages will no longer have to travel to the capital."),
    ("school", "A primary school in the east of the city will get a new roof and solar panels. The panels are "
               "expected to cover half of the school's electricity needs. Pupils will learn about the project in "
               "their science lessons. The work will be done during the summer holidays."),
]
FOOTER = "Impressum | Datenschutz | Kontakt | Newsletter | Alle Rechte vorbehalten"


def main() -> None:
    here = Path(__file__).resolve().parent
    de, en = [], []
    for i, (slug, english, german) in enumerate(BOTH):
        en.append({"id": f"en-{i + 1}", "url": f"https://news.example.org/en/{slug}", "text": english})
        de.append({"id": f"de-{i + 1}", "url": f"https://zeitung.example.org/de/{slug}",
                   "text": german + "\n" + FOOTER})
    for slug, german in GERMAN_ONLY:
        de.append({"id": f"de-{len(de) + 1}", "url": f"https://zeitung.example.org/de/{slug}", "text": german})
    for slug, english in ENGLISH_ONLY:
        en.append({"id": f"en-{len(en) + 1}", "url": f"https://news.example.org/en/{slug}", "text": english})
    # an English story on the German site, and a German story copied by another site
    de.append({"id": "de-english", "url": "https://zeitung.example.org/international/hospital",
               "text": ENGLISH_ONLY[1][1]})
    de.append({"id": "de-copy", "url": "https://aggregator.example.net/story/4711", "text": BOTH[2][2]})
    for name, rows in (("de.jsonl", de), ("en.jsonl", en)):
        (here / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
