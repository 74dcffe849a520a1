"""Phrases for filter_sets.py: one news sentence in German, French, Russian,
Chinese, Spanish and English, with numbers written as each language writes them.

Each generator takes a ``random.Random`` and returns ``{lang: text}`` for the six languages,
the same facts in each (values, names, places), each language's own way of writing them
drawn at random (the separators, "15.30 Uhr" or "15:30 Uhr", "€1,500" or "1,500 euros").
"""

from __future__ import annotations

import random

NBSP, NNBSP = "\u00a0", "\u202f"
LANGS = ("de", "fr", "ru", "zh", "es", "en")

MONTHS = {
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "ru": "января февраля марта апреля мая июня июля августа сентября октября ноября декабря",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "en": "January February March April May June July August September October November December",
}
MONTHS = {lang: names.split() for lang, names in MONTHS.items()}
WEEKDAYS = {  # "on Monday" as each sentence needs it
    "de": ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag"],
    "fr": ["lundi", "mardi", "mercredi", "jeudi", "vendredi"],
    "ru": ["в понедельник", "во вторник", "в среду", "в четверг", "в пятницу"],
    "zh": ["周一", "周二", "周三", "周四", "周五"],
    "es": ["lunes", "martes", "miércoles", "jueves", "viernes"],
    "en": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
}
# de, fr, ru (nominative, "in" + locative, "to" + accusative), zh, es, en
CITIES = [
    ("Berlin", "Berlin", "Берлин", "в Берлине", "в Берлин", "柏林", "Berlín", "Berlin"),
    ("Paris", "Paris", "Париж", "в Париже", "в Париж", "巴黎", "París", "Paris"),
    ("Moskau", "Moscou", "Москва", "в Москве", "в Москву", "莫斯科", "Moscú", "Moscow"),
    ("Peking", "Pékin", "Пекин", "в Пекине", "в Пекин", "北京", "Pekín", "Beijing"),
    ("Madrid", "Madrid", "Мадрид", "в Мадриде", "в Мадрид", "马德里", "Madrid", "Madrid"),
    ("Brüssel", "Bruxelles", "Брюссель", "в Брюсселе", "в Брюссель", "布鲁塞尔", "Bruselas", "Brussels"),
    ("London", "Londres", "Лондон", "в Лондоне", "в Лондон", "伦敦", "Londres", "London"),
    ("Washington", "Washington", "Вашингтон", "в Вашингтоне", "в Вашингтон", "华盛顿", "Washington", "Washington"),
    ("Rom", "Rome", "Рим", "в Риме", "в Рим", "罗马", "Roma", "Rome"),
    ("Kiew", "Kiev", "Киев", "в Киеве", "в Киев", "基辅", "Kiev", "Kyiv"),
    ("Wien", "Vienne", "Вена", "в Вене", "в Вену", "维也纳", "Viena", "Vienna"),
    ("Warschau", "Varsovie", "Варшава", "в Варшаве", "в Варшаву", "华沙", "Varsovia", "Warsaw"),
]
# de, fr, ru, zh, es, en, whether Russian verbs take the feminine ending
NAMES = [
    ("Merkel", "Merkel", "Меркель", "默克尔", "Merkel", "Merkel", True),
    ("Macron", "Macron", "Макрон", "马克龙", "Macron", "Macron", False),
    ("Putin", "Poutine", "Путин", "普京", "Putin", "Putin", False),
    ("Biden", "Biden", "Байден", "拜登", "Biden", "Biden", False),
    ("Xi Jinping", "Xi Jinping", "Си Цзиньпин", "习近平", "Xi Jinping", "Xi Jinping", False),
    ("Scholz", "Scholz", "Шольц", "朔尔茨", "Scholz", "Scholz", False),
    ("Sánchez", "Sánchez", "Санчес", "桑切斯", "Sánchez", "Sánchez", False),
    ("Johnson", "Johnson", "Джонсон", "约翰逊", "Johnson", "Johnson", False),
    ("von der Leyen", "von der Leyen", "фон дер Ляйен", "冯德莱恩", "Von der Leyen", "von der Leyen", True),
    ("Selenskyj", "Zelensky", "Зеленский", "泽连斯基", "Zelenski", "Zelensky", False),
    ("Meloni", "Meloni", "Мелони", "梅洛尼", "Meloni", "Meloni", True),
    ("Modi", "Modi", "Моди", "莫迪", "Modi", "Modi", False),
    ("Lula", "Lula", "Лула", "卢拉", "Lula", "Lula", False),
    ("Erdoğan", "Erdogan", "Эрдоган", "埃尔多安", "Erdogan", "Erdoğan", False),
]


# --- how each language writes a number ----------------------------------------------------

def integer(n: int, lang: str, rng: random.Random) -> str:
    """1500 as de 1.500 (Swiss 1'500), fr 1 500 (no-break, thin or plain space), ru 1 500,
    es 1.500, zh 1500 or 1,500, en 1,500; four digits often without a separator."""
    if n < 1000:
        return str(n)
    if lang == "en":
        return f"{n:,}" if n >= 10_000 or rng.random() < 0.85 else str(n)
    if n < 10_000 and rng.random() < 0.4:
        return str(n)
    sep = {"de": rng.choice([".", ".", ".", "'"]), "fr": rng.choice([NBSP, NNBSP, " "]),
           "ru": rng.choice([NBSP, " "]), "es": ".", "zh": ","}[lang]
    return f"{n:,}".replace(",", sep)


def decimal(x: float, lang: str, places: int = 1) -> str:
    text = f"{x:.{places}f}"
    return text if lang in ("en", "zh") else text.replace(".", ",")


def ordinal_en(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def each(make) -> dict[str, str]:
    return {lang: make(lang) for lang in LANGS}


# --- clauses: one sentence with numbers ----------------------------------------------------

def clock(rng: random.Random) -> dict[str, str]:
    h, m = rng.randint(7, 22), rng.choice([0, 0, 10, 15, 30, 45])
    h12, half = (h - 12 if h > 12 else h), ("p.m." if h >= 12 else "a.m.")
    forms = {
        "de": [f"{h}.{m:02d} Uhr", f"{h}:{m:02d} Uhr"] + ([f"{h} Uhr"] if m == 0 else []),
        "fr": [f"{h} h {m:02d}", f"{h}h{m:02d}"] if m else [f"{h} heures", f"{h} h"],
        "ru": [f"{h}:{m:02d}", f"{h}.{m:02d}"],
        "zh": [f"{h}点{m:02d}分" if m else f"{h}点", f"{h}:{m:02d}"]
        + ([f"{'下午' if h >= 12 else '上午'}{h12}点{m}分" if m else f"{'下午' if h >= 12 else '上午'}{h12}点"]),
        "es": [f"{h}.{m:02d} h", f"{h}:{m:02d} horas"],
        "en": [f"{h12}:{m:02d} {half}", f"{h12}:{m:02d}{half.replace('.', '')}", f"{h}:{m:02d}"]
        + ([f"{h12} {half}"] if m == 0 else []),
    }
    t = {lang: rng.choice(f) for lang, f in forms.items()}
    stop = {lang: "" if text.endswith(".") else "." for lang, text in t.items()}  # "5 p.m." ends the sentence
    return rng.choice([
        {"de": f"Die Pressekonferenz beginnt um {t['de']}.", "fr": f"La conférence de presse commence à {t['fr']}.",
         "ru": f"Пресс-конференция начнётся в {t['ru']}.", "zh": f"新闻发布会将于{t['zh']}开始。",
         "es": f"La rueda de prensa comenzará a las {t['es']}.",
         "en": f"The press conference starts at {t['en']}{stop['en']}"},
        {"de": f"Der Zug nach Berlin fährt um {t['de']} ab.", "fr": f"Le train pour Berlin part à {t['fr']}.",
         "ru": f"Поезд в Берлин отправляется в {t['ru']}.", "zh": f"开往柏林的列车于{t['zh']}出发。",
         "es": f"El tren a Berlín sale a las {t['es']}.", "en": f"The train to Berlin leaves at {t['en']}{stop['en']}"},
    ])


def date(rng: random.Random) -> dict[str, str]:
    d, mo, y = rng.randint(1, 28), rng.randint(1, 12), rng.randint(1990, 2024)
    month = {lang: names[mo - 1] for lang, names in MONTHS.items()}
    t = {
        "de": rng.choice([f"{d}. {month['de']} {y}", f"{d:02d}.{mo:02d}.{y}", f"{d}.{mo}.{y}"]),
        "fr": f"{'1er' if d == 1 else d} {month['fr']} {y}",
        "ru": f"{d} {month['ru']} {y} года",
        "zh": f"{y}年{mo}月{d}日",
        "es": f"{d} de {month['es']} de {y}",
        "en": rng.choice([f"{month['en']} {d}, {y}", f"{d} {month['en']} {y}"]),
    }
    return rng.choice([
        {"de": f"Das Gesetz tritt am {t['de']} in Kraft.", "fr": f"La loi entre en vigueur le {t['fr']}.",
         "ru": f"Закон вступает в силу {t['ru']}.", "zh": f"该法律于{t['zh']}生效。",
         "es": f"La ley entra en vigor el {t['es']}.", "en": f"The law takes effect on {t['en']}."},
        {"de": f"Die Wahl findet am {t['de']} statt.", "fr": f"L'élection aura lieu le {t['fr']}.",
         "ru": f"Выборы пройдут {t['ru']}.", "zh": f"选举将于{t['zh']}举行。",
         "es": f"Las elecciones se celebrarán el {t['es']}.", "en": f"The election will be held on {t['en']}."},
    ])


def money(rng: random.Random) -> dict[str, str]:
    n = rng.choice([rng.randint(12, 999), rng.randint(1000, 9999), rng.randint(10, 999) * 1000])
    cur = rng.choice(["eur", "usd", "local"])
    num = {lang: integer(n, lang, rng) for lang in LANGS}
    if cur == "eur":
        m = {"de": rng.choice([f"{num['de']} Euro", f"{num['de']} €"]),
             "fr": rng.choice([f"{num['fr']}{NBSP}€", f"{num['fr']} euros"]), "ru": f"{num['ru']} евро",
             "zh": f"{num['zh']}欧元", "es": rng.choice([f"{num['es']} euros", f"{num['es']} €"]),
             "en": rng.choice([f"€{num['en']}", f"{num['en']} euros"])}
    elif cur == "usd":
        m = {"de": rng.choice([f"{num['de']} Dollar", f"{num['de']} $"]),
             "fr": rng.choice([f"{num['fr']} $", f"{num['fr']}$", f"{num['fr']} dollars"]),
             "ru": f"{num['ru']} долл.", "zh": f"{num['zh']}美元",
             "es": rng.choice([f"{num['es']} dólares", f"US$ {num['es']}"]), "en": f"${num['en']}"}
    else:  # each its own currency would be a conversion; the rouble in every language
        m = {"de": f"{num['de']} Rubel", "fr": f"{num['fr']} roubles", "ru": f"{num['ru']} руб.",
             "zh": f"{num['zh']}卢布", "es": f"{num['es']} rublos", "en": f"{num['en']} roubles"}
    return rng.choice([
        {"de": f"Das Ticket kostet {m['de']}.", "fr": f"Le billet coûte {m['fr']}.", "ru": f"Билет стоит {m['ru']}.",
         "zh": f"门票售价{m['zh']}。", "es": f"La entrada cuesta {m['es']}.", "en": f"The ticket costs {m['en']}."},
        {"de": f"Die Firma zahlte eine Strafe von {m['de']}.", "fr": f"L'entreprise a payé une amende de {m['fr']}.",
         "ru": f"Компания заплатила штраф в размере {m['ru']}.", "zh": f"该公司支付了{m['zh']}的罚款。",
         "es": f"La empresa pagó una multa de {m['es']}.", "en": f"The company paid a fine of {m['en']}."},
    ])


def scaled(rng: random.Random) -> dict[str, str]:
    """7,2 Millionen / 720万 / 7.200 millones: millions and billions."""
    x = rng.choice([rng.randint(11, 99) / 10, float(rng.randint(2, 90))])
    places = 0 if x.is_integer() else 1
    billion = rng.random() < 0.4
    v = {lang: decimal(x, lang, places) for lang in LANGS}
    if billion:
        es = rng.choice([f"{v['es']} mil millones", f"{integer(round(x * 1000), 'es', rng)} millones"])
        s = {"de": f"{v['de']} {rng.choice(['Milliarden', 'Mrd.'])}", "fr": f"{v['fr']} milliards",
             "ru": f"{v['ru']} млрд", "zh": f"{x * 10:g}亿", "es": es, "en": f"{v['en']} billion"}
    else:
        s = {"de": f"{v['de']} {rng.choice(['Millionen', 'Mio.'])}", "fr": f"{v['fr']} millions",
             "ru": f"{v['ru']} {rng.choice(['млн', 'млн.'])}", "zh": f"{x * 100:g}万", "es": f"{v['es']} millones",
             "en": f"{v['en']} million"}
    if rng.random() < 0.5:
        return {"de": f"Das Projekt kostet {s['de']} Euro.", "fr": f"Le projet coûte {s['fr']} d'euros.",
                "ru": f"Проект стоит {s['ru']} евро.", "zh": f"该项目耗资{s['zh']}欧元。",
                "es": f"El proyecto cuesta {s['es']} de euros.",
                "en": rng.choice([f"The project costs {s['en']} euros.", f"The project costs €{s['en']}."])}
    return {"de": f"Der Konzern meldete einen Umsatz von {s['de']} Dollar.",
            "fr": f"Le groupe a annoncé un chiffre d'affaires de {s['fr']} de dollars.",
            "ru": f"Концерн сообщил о выручке в {s['ru']} долларов.", "zh": f"该集团公布的营业额为{s['zh']}美元。",
            "es": f"El grupo registró una facturación de {s['es']} de dólares.",
            "en": f"The group reported sales of ${s['en']}."}


def percent(rng: random.Random) -> dict[str, str]:
    x = rng.choice([rng.randint(1, 199) / 10, float(rng.randint(2, 60))])
    places = 0 if x.is_integer() else 1
    v = {lang: decimal(x, lang, places) for lang in LANGS}
    p = {"de": rng.choice([f"{v['de']} Prozent", f"{v['de']} %", f"{v['de']}%"]),
         "fr": rng.choice([f"{v['fr']}{NBSP}%", f"{v['fr']} %", f"{v['fr']} pour cent"]),
         "ru": rng.choice([f"{v['ru']}%", f"{v['ru']} процента"]),
         "zh": rng.choice([f"{v['zh']}%", f"百分之{v['zh']}"]),
         "es": rng.choice([f"{v['es']} %", f"{v['es']} por ciento"]),
         "en": rng.choice([f"{v['en']}%", f"{v['en']} percent", f"{v['en']} per cent"])}
    if rng.random() < 0.5:
        return {"de": f"Die Arbeitslosenquote stieg auf {p['de']}.", "fr": f"Le taux de chômage est passé à {p['fr']}.",
                "ru": f"Уровень безработицы вырос до {p['ru']}.", "zh": f"失业率升至{p['zh']}。",
                "es": f"La tasa de paro subió al {p['es']}.", "en": f"The unemployment rate rose to {p['en']}."}
    # English names the year, the others say "last year": one number more on one side
    year = rng.randint(2000, 2023)
    return {"de": f"Im vergangenen Jahr stiegen die Exporte um {p['de']}.",
            "fr": f"L'an dernier, les exportations ont augmenté de {p['fr']}.",
            "ru": f"В прошлом году экспорт вырос на {p['ru']}.", "zh": f"去年出口增长了{p['zh']}。",
            "es": f"El año pasado las exportaciones crecieron un {p['es']}.",
            "en": rng.choice([f"In {year}, exports rose by {p['en']}.", f"Last year, exports rose by {p['en']}."])}


def units(rng: random.Random) -> dict[str, str]:
    """Units, where English often adds a conversion in brackets."""
    if rng.random() < 0.5:
        km = rng.randint(12, 480)
        miles = round(km / 1.609)
        en = rng.choice([f"{km} kilometres", f"{km} km", f"{miles} miles ({km} km)", f"{km} km ({miles} miles)"])
        return {"de": f"Die neue Strecke ist {km} {rng.choice(['Kilometer', 'km'])} lang.",
                "fr": f"La nouvelle ligne mesure {km} kilomètres.", "ru": f"Протяжённость новой линии — {km} км.",
                "zh": f"新线路全长{km}公里。", "es": f"La nueva línea mide {km} kilómetros.",
                "en": f"The new line is {en} long."}
    c = rng.randint(21, 39)
    f = round(c * 9 / 5 + 32)
    en = rng.choice([f"{c} degrees", f"{c}C ({f}F)", f"{c} degrees Celsius ({f} Fahrenheit)"])
    return {"de": f"Am Wochenende werden bis zu {c} Grad erwartet.",
            "fr": f"Jusqu'à {c} degrés sont attendus ce week-end.", "ru": f"В выходные ожидается до {c} °C.",
            "zh": f"周末气温预计最高可达{c}摄氏度。", "es": f"Se esperan hasta {c} grados el fin de semana.",
            "en": f"Temperatures of up to {en} are expected at the weekend."}


def ordinal(rng: random.Random) -> dict[str, str]:
    k = rng.randint(2, 60)
    if rng.random() < 0.5:
        return {"de": f"Die Mannschaft belegte den {k}. Platz.", "fr": f"L'équipe a terminé à la {k}e place.",
                "ru": f"Команда заняла {k}-е место.", "zh": f"该队获得第{k}名。",
                "es": f"El equipo terminó en el {k}.º puesto.", "en": f"The team finished in {ordinal_en(k)} place."}
    return {"de": f"Das Festival findet zum {k}. Mal statt.", "fr": f"Le festival a lieu pour la {k}e fois.",
            "ru": f"Фестиваль проходит в {k}-й раз.", "zh": f"该节日第{k}次举办。",
            "es": f"El festival se celebra por {k}.ª vez.",
            "en": f"The festival is being held for the {ordinal_en(k)} time."}


def decade(rng: random.Random) -> dict[str, str]:
    d = rng.choice(range(1950, 2020, 10))
    dd = d % 100
    long = rng.random() < 0.5 or d >= 2000
    dec = {
        "de": f"in den {d}er-Jahren" if long else f"in den {dd:02d}er Jahren",
        "fr": f"dans les années {d}" if long else f"dans les années {dd}",
        "ru": f"в {d}-х годах" if long else f"в {dd}-е годы",
        "zh": f"于{d}年代" if long else f"于上世纪{dd}年代",
        "es": f"en la década de {d}" if long else f"en los años {dd}",
        "en": rng.choice([f"in the {d}s"] + ([f"in the '{dd}s"] if not long else [])),
    }
    season = rng.randint(2005, 2023)
    if rng.random() < 0.5:
        return {"de": f"Das Gebäude wurde {dec['de']} errichtet.", "fr": f"Le bâtiment a été construit {dec['fr']}.",
                "ru": f"Здание было построено {dec['ru']}.", "zh": f"这座建筑建{dec['zh']}。",
                "es": f"El edificio fue construido {dec['es']}.", "en": f"The building was built {dec['en']}."}
    s2 = (season + 1) % 100
    return {"de": f"In der Saison {season}/{s2:02d} wurde der Verein Meister.",
            "fr": f"Le club a été sacré champion lors de la saison {season}-{season + 1}.",
            "ru": f"В сезоне {season}/{s2:02d} клуб стал чемпионом.", "zh": f"该俱乐部在{season}/{s2:02d}赛季夺冠。",
            "es": f"El club fue campeón en la temporada {season}-{s2:02d}.",
            "en": f"The club won the title in the {season}-{s2:02d} season."}


def phone(rng: random.Random) -> dict[str, str]:
    pairs_of_digits = " ".join(str(rng.randint(10, 99)) for _ in range(4))
    number = rng.choice([f"+49 30 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
                         f"0800 {rng.randint(100, 999)} {rng.randint(100, 999)}", f"+33 1 {pairs_of_digits}"])
    return {"de": f"Hinweise nimmt die Polizei unter der Nummer {number} entgegen.",
            "fr": f"La police recueille les témoignages au {number}.",
            "ru": f"Информацию можно сообщить в полицию по телефону {number}.", "zh": f"知情者可拨打警方电话{number}。",
            "es": f"La policía atiende las llamadas en el {number}.", "en": f"Police can be reached on {number}."}


def prices(rng: random.Random) -> dict[str, str]:
    """Two decimal amounts."""
    drop, price = rng.randint(11, 499) / 100, rng.randint(5000, 9999) / 100
    a = {lang: decimal(drop, lang, 2) for lang in LANGS}
    b = {lang: decimal(price, lang, 2) for lang in LANGS}
    return {"de": f"Der Ölpreis fiel um {a['de']} Dollar auf {b['de']} Dollar.",
            "fr": f"Le prix du pétrole a baissé de {a['fr']} dollars, à {b['fr']} dollars.",
            "ru": f"Цена на нефть упала на {a['ru']} доллара, до {b['ru']} доллара.",
            "zh": f"油价下跌{a['zh']}美元，至{b['zh']}美元。",
            "es": f"El precio del petróleo cayó {a['es']} dólares, hasta {b['es']} dólares.",
            "en": rng.choice([f"The oil price fell by ${a['en']} to ${b['en']}.",
                              f"The oil price fell {a['en']} dollars to {b['en']} dollars."])}


SPELLED = {"de": "zwei drei vier fünf sechs sieben acht neun", "fr": "deux trois quatre cinq six sept huit neuf",
           "ru": "два три четыре пять шесть семь восемь девять", "zh": "两 三 四 五 六 七 八 九",
           "es": "dos tres cuatro cinco seis siete ocho nueve", "en": "two three four five six seven eight nine"}
SPELLED = {lang: words.split() for lang, words in SPELLED.items()}


def spelled(rng: random.Random) -> dict[str, str]:
    """A small number in words on some sides and in digits on others, and a road number."""
    n, road = rng.randint(2, 9), rng.randint(1, 99)

    def count(lang):
        word = SPELLED[lang][n - 2]
        return str(n) if rng.random() < 0.4 else word

    c = each(count)
    people = "человека" if n in (2, 3, 4) else "человек"
    return {"de": f"Bei dem Unfall auf der A{road} wurden {c['de']} Menschen verletzt.",
            "fr": f"{c['fr'].capitalize()} personnes ont été blessées dans l'accident sur l'A{road}.",
            "ru": f"В результате аварии на трассе А{road} пострадали {c['ru']} {people}.",
            "zh": f"A{road}高速公路上发生的事故造成{c['zh']}人受伤。",
            "es": f"{c['es'].capitalize()} personas resultaron heridas en el accidente de la A-{road}.",
            "en": f"{c['en'].capitalize()} people were injured in the accident on the A{road}."}


def age(rng: random.Random) -> dict[str, str]:
    a = rng.randint(18, 89)
    return {"de": f"Der {a}-jährige Fahrer wurde leicht verletzt.",
            "fr": f"Le conducteur, âgé de {a} ans, a été légèrement blessé.",
            "ru": f"{a}-летний водитель получил лёгкие травмы.", "zh": f"这名{a}岁的司机受了轻伤。",
            "es": f"El conductor, de {a} años, resultó herido leve.",
            "en": f"The {a}-year-old driver was slightly injured."}


def score(rng: random.Random) -> dict[str, str]:
    a, b, minute = rng.randint(1, 5), rng.randint(0, 3), rng.randint(10, 90)
    return {"de": f"Bayern gewann mit {a}:{b} gegen Dortmund, das Siegtor fiel in der {minute}. Minute.",
            "fr": f"Le Bayern s'est imposé {a}-{b} face à Dortmund, le but décisif tombant à la {minute}e minute.",
            "ru": f"«Бавария» обыграла «Боруссию» со счётом {a}:{b}, решающий гол был забит на {minute}-й минуте.",
            "zh": f"拜仁以{a}比{b}战胜多特蒙德，制胜球出现在第{minute}分钟。",
            "es": f"El Bayern ganó {a}-{b} al Dortmund con un gol en el minuto {minute}.",
            "en": f"Bayern beat Dortmund {a}-{b}, with the winner coming in the {ordinal_en(minute)} minute."}


CLAUSES = [clock, date, money, scaled, percent, units, ordinal, decade, phone, prices, spelled, age, score]


# --- headlines and names ---------------------------------------------------------------------

HEADLINES = [dict(zip(LANGS, line, strict=True)) for line in [
    ("Regierung tritt zurück", "Le gouvernement démissionne", "Правительство уходит в отставку", "政府辞职",
     "Dimite el Gobierno", "Government resigns"),
    ("Streik legt Bahnverkehr lahm", "La grève paralyse le trafic ferroviaire",
     "Забастовка парализовала железные дороги", "罢工导致铁路交通瘫痪", "La huelga paraliza el tráfico ferroviario",
     "Strike paralyses rail traffic"),
    ("Börse schließt im Minus", "La Bourse termine en baisse", "Биржа закрылась в минусе", "股市收跌",
     "La Bolsa cierra en negativo", "Stock market closes lower"),
    ("Unwetter im Süden", "Intempéries dans le Sud", "Непогода на юге", "南方遭遇恶劣天气", "Temporal en el sur",
     "Storms in the south"),
    ("Neue Regeln für Banken", "De nouvelles règles pour les banques", "Новые правила для банков", "银行业新规",
     "Nuevas normas para los bancos", "New rules for banks"),
    ("Preise steigen weiter", "Les prix continuent d'augmenter", "Цены продолжают расти", "物价继续上涨",
     "Los precios siguen subiendo", "Prices keep rising"),
    ("Wahl ohne klaren Sieger", "Une élection sans vainqueur clair", "Выборы без явного победителя", "选举没有明显赢家",
     "Elecciones sin un claro ganador", "Election without a clear winner"),
    ("Klimagipfel endet ohne Einigung", "Le sommet sur le climat s'achève sans accord",
     "Климатический саммит завершился без соглашения", "气候峰会未达成协议", "La cumbre del clima termina sin acuerdo",
     "Climate summit ends without agreement"),
    ("Polizei sucht Zeugen", "La police recherche des témoins", "Полиция ищет свидетелей", "警方寻找目击者",
     "La policía busca testigos", "Police seek witnesses"),
    ("Schulen bleiben geschlossen", "Les écoles restent fermées", "Школы остаются закрытыми", "学校继续停课",
     "Las escuelas siguen cerradas", "Schools remain closed"),
    ("Mehr Geld für die Forschung", "Plus d'argent pour la recherche", "Больше денег на науку", "增加科研经费",
     "Más dinero para la investigación", "More money for research"),
    ("Flughafen wieder geöffnet", "L'aéroport rouvre", "Аэропорт снова открыт", "机场重新开放", "El aeropuerto reabre",
     "Airport reopens"),
    ("Das Wetter am Wochenende", "La météo du week-end", "Погода на выходные", "周末天气",
     "El tiempo para el fin de semana", "The weekend weather"),
    ("Ein Jahr nach der Flut", "Un an après l'inondation", "Год спустя после наводнения", "洪灾一年后",
     "Un año después de la inundación", "One year after the flood"),
    ("Sieg im Elfmeterschießen", "Victoire aux tirs au but", "Победа в серии пенальти", "点球大战获胜",
     "Victoria en la tanda de penaltis", "Victory on penalties"),
    ("Weniger Arbeitslose im Mai", "Moins de chômeurs en mai", "В мае стало меньше безработных", "五月失业人数减少",
     "Menos parados en mayo", "Fewer unemployed in May"),
    ("Ärzte warnen vor Hitze", "Les médecins mettent en garde contre la chaleur", "Врачи предупреждают о жаре",
     "医生警告高温危害", "Los médicos advierten del calor", "Doctors warn of heat"),
    ("Rekord bei Exporten", "Record des exportations", "Рекорд экспорта", "出口创纪录", "Récord de exportaciones",
     "Record exports"),
    ("Neuer Trainer für den Verein", "Un nouvel entraîneur pour le club", "У клуба новый тренер", "俱乐部迎来新主教练",
     "Nuevo entrenador para el club", "New coach for the club"),
    ("Brand in der Altstadt", "Incendie dans la vieille ville", "Пожар в старом городе", "老城区发生火灾",
     "Incendio en el casco antiguo", "Fire in the old town"),
    ("Mieten steigen kräftig", "Les loyers flambent", "Арендная плата резко растёт", "房租大幅上涨",
     "Los alquileres se disparan", "Rents soar"),
    ("Waldbrände außer Kontrolle", "Les feux de forêt hors de contrôle", "Лесные пожары вышли из-под контроля",
     "森林大火失控", "Los incendios forestales, fuera de control", "Wildfires out of control"),
]]


def _people(rng: random.Random, count: int):
    return rng.sample(NAMES, count)


def _name(person, lang: str) -> str:
    return person[LANGS.index(lang)]


def _city(city, lang: str, form: str = "") -> str:
    """form: '' nominative, 'in' (Russian locative with в), 'to' (Russian accusative with в)."""
    if lang == "ru":
        return city[{"": 2, "in": 3, "to": 4}[form]]
    return city[{"de": 0, "fr": 1, "zh": 5, "es": 6, "en": 7}[lang]]


def name_visit(rng: random.Random) -> dict[str, str]:
    (a,), c = _people(rng, 1), rng.choice(CITIES)
    n = {lang: _name(a, lang) for lang in LANGS}
    ending = "а" if a[-1] else ""
    return {"de": f"{n['de']} besucht {_city(c, 'de')}", "fr": f"{n['fr']} en visite à {_city(c, 'fr')}",
            "ru": f"{n['ru']} посетил{ending} {_city(c, 'ru', 'to')[2:]}", "zh": f"{n['zh']}访问{_city(c, 'zh')}",
            "es": f"{n['es']} visita {_city(c, 'es')}", "en": f"{n['en']} visits {_city(c, 'en')}"}


def name_talks(rng: random.Random) -> dict[str, str]:
    (a, b), c = _people(rng, 2), rng.choice(CITIES)
    n = {lang: (_name(a, lang), _name(b, lang)) for lang in LANGS}
    return {"de": f"{n['de'][0]} und {n['de'][1]}: Gespräche in {_city(c, 'de')}",
            "fr": f"{n['fr'][0]} et {n['fr'][1]} : entretiens à {_city(c, 'fr')}",
            "ru": f"{n['ru'][0]} и {n['ru'][1]}: переговоры {_city(c, 'ru', 'in')}",
            "zh": f"{n['zh'][0]}与{n['zh'][1]}在{_city(c, 'zh')}会谈",
            "es": f"{n['es'][0]} y {n['es'][1]}: conversaciones en {_city(c, 'es')}",
            "en": f"{n['en'][0]} and {n['en'][1]}: talks in {_city(c, 'en')}"}


def name_call(rng: random.Random) -> dict[str, str]:
    a, b = _people(rng, 2)
    n = {lang: (_name(a, lang), _name(b, lang)) for lang in LANGS}
    return {"de": f"Telefonat zwischen {n['de'][0]} und {n['de'][1]}",
            "fr": f"Entretien téléphonique entre {n['fr'][0]} et {n['fr'][1]}",
            "ru": f"{n['ru'][0]} и {n['ru'][1]} провели телефонный разговор",
            "zh": f"{n['zh'][0]}与{n['zh'][1]}通电话",
            "es": f"Conversación telefónica entre {n['es'][0]} y {n['es'][1]}",
            "en": f"Phone call between {n['en'][0]} and {n['en'][1]}"}


def name_interview(rng: random.Random) -> dict[str, str]:
    (a,) = _people(rng, 1)
    n = {lang: _name(a, lang) for lang in LANGS}
    return {"de": f"Interview mit {n['de']}", "fr": f"Entretien avec {n['fr']}", "ru": f"Интервью: {n['ru']}",
            "zh": f"专访{n['zh']}", "es": f"Entrevista con {n['es']}", "en": f"Interview with {n['en']}"}


NAME_HEADLINES = [name_visit, name_talks, name_call, name_interview]


def index_headline(rng: random.Random) -> dict[str, str]:
    points = rng.randint(10_000, 19_999)
    p = {lang: integer(points, lang, rng) for lang in LANGS}
    return {"de": f"Leitindex schließt bei {p['de']} Punkten", "fr": f"L'indice termine à {p['fr']} points",
            "ru": f"Индекс закрылся на отметке {p['ru']} пунктов", "zh": f"指数收于{p['zh']}点",
            "es": f"El índice cierra en {p['es']} puntos", "en": f"Index closes at {p['en']} points"}


def inflation_headline(rng: random.Random) -> dict[str, str]:
    rate = rng.randint(11, 99) / 10
    v = {lang: decimal(rate, lang) for lang in LANGS}
    return {"de": f"Inflation steigt auf {v['de']} Prozent", "fr": f"L'inflation grimpe à {v['fr']}{NBSP}%",
            "ru": f"Инфляция выросла до {v['ru']}%", "zh": f"通胀率升至{v['zh']}%",
            "es": f"La inflación sube al {v['es']} %", "en": f"Inflation rises to {v['en']}%"}


def quake_headline(rng: random.Random) -> dict[str, str]:
    n = rng.randint(10, 300)
    return {"de": f"{n} Tote bei Erdbeben", "fr": f"Séisme : {n} morts", "ru": f"Землетрясение: {n} погибших",
            "zh": f"地震造成{n}人死亡", "es": f"{n} muertos en un terremoto", "en": f"Earthquake kills {n}"}


NUMBER_HEADLINES = [index_headline, inflation_headline, quake_headline]


def name_meeting(rng: random.Random) -> dict[str, str]:
    (a, b), c, day = _people(rng, 2), rng.choice(CITIES), rng.randrange(5)
    n = {lang: (_name(a, lang), _name(b, lang)) for lang in LANGS}
    w = {lang: days[day] for lang, days in WEEKDAYS.items()}
    return {"de": f"{n['de'][0]} und {n['de'][1]} trafen sich am {w['de']} in {_city(c, 'de')}.",
            "fr": f"{n['fr'][0]} et {n['fr'][1]} se sont rencontrés {w['fr']} à {_city(c, 'fr')}.",
            "ru": f"{n['ru'][0]} и {n['ru'][1]} встретились {w['ru']} {_city(c, 'ru', 'in')}.",
            "zh": f"{n['zh'][0]}和{n['zh'][1]}{w['zh']}在{_city(c, 'zh')}会面。",
            "es": f"{n['es'][0]} y {n['es'][1]} se reunieron el {w['es']} en {_city(c, 'es')}.",
            "en": f"{n['en'][0]} and {n['en'][1]} met in {_city(c, 'en')} on {w['en']}."}


def name_statement(rng: random.Random) -> dict[str, str]:
    (a,), c, day = _people(rng, 1), rng.choice(CITIES), rng.randrange(5)
    n = {lang: _name(a, lang) for lang in LANGS}
    w = {lang: days[day] for lang, days in WEEKDAYS.items()}
    ru_end = "а" if a[-1] else ""
    fr_end = "e" if a[-1] else ""
    return rng.choice([
        {"de": f"{n['de']} sagte am {w['de']} in {_city(c, 'de')}, die Gespräche würden fortgesetzt.",
         "fr": f"{n['fr']} a déclaré {w['fr']} à {_city(c, 'fr')} que les discussions se poursuivraient.",
         "ru": f"{n['ru']} заявил{ru_end} {w['ru']} {_city(c, 'ru', 'in')}, что переговоры продолжатся.",
         "zh": f"{n['zh']}{w['zh']}在{_city(c, 'zh')}表示，会谈将继续进行。",
         "es": f"{n['es']} afirmó el {w['es']} en {_city(c, 'es')} que las conversaciones continuarán.",
         "en": f"{n['en']} said in {_city(c, 'en')} on {w['en']} that the talks would continue."},
        {"de": f"{n['de']} traf am {w['de']} zu einem zweitägigen Besuch in {_city(c, 'de')} ein.",
         "fr": f"{n['fr']} est arrivé{fr_end} {w['fr']} à {_city(c, 'fr')} pour une visite de deux jours.",
         "ru": f"{n['ru']} прибыл{ru_end} {w['ru']} {_city(c, 'ru', 'to')} с двухдневным визитом.",
         "zh": f"{n['zh']}{w['zh']}抵达{_city(c, 'zh')}，开始为期两天的访问。",
         "es": f"{n['es']} llegó el {w['es']} a {_city(c, 'es')} para una visita de dos días.",
         "en": f"{n['en']} arrived in {_city(c, 'en')} on {w['en']} for a two-day visit."},
    ])


NAME_SENTENCES = [name_meeting, name_statement]
