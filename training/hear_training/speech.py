"""The speech the learned noise suppressor is trained, validated and evaluated on, split by speaker.

Every source is a Debian package, installed by `make train` (training/debian-packages); files are
picked by package (`dpkg -L`), never by globbing a shared directory: asterisk-prompt-* install into
the same /usr/share/asterisk/sounds tree as the asterisk-core-sounds-* packages, which are reserved
for independent evaluation (issue #13) and must never be read here.

Audio is decoded with sox (mixed to mono, resampled to 48 kHz) into a cache under
.build/train-cache, leading and trailing silence trimmed (klettres' files, one sound in ~2 s of
noise floor, gated down to the sound), and kept per speaker as float32 with each prompt's source
rate and top (the highest frequency its speech carries, `band_top`); callers get float64 mono
48 kHz arrays. data.py writes the top of a clip's speech into its manifest, and train.py ignores
the gain target above it: an 8 kHz voice does not teach the model that speech stops at 4 kHz.

The split, by speaker (a speaker's prompts all land in one split):

  eval   held-out recorded human voices, used only by `make eval` (evaluate.py), in four groups
         (EVAL_UTTERANCES): deciding, the dry talkers the evaluation decides on (klettres-data's
         Danish, Lithuanian and Russian talkers, 44.1 kHz, gated to digital silence between their
         letters and syllables: DRY_TALKERS, and ktuberling's Russian woman held out with them);
         home, the deciding set until issue #34, home recordings whose references keep their floor
         and room (a LibriVox reader from pocketsphinx-testdata, English, 16 kHz; five
         tuxpaint-stamps-default contributors, Belarusian, Greek, Spanish, Romanian, Russian;
         ktuberling-data's German and Lithuanian speakers, all 44.1 kHz: HOME_TALKERS);
         narrowband, asterisk-prompt-es-co (Colombian Spanish, 8 kHz GSM); acted, the hedgewars
         packs Default_es, Default_uk and Russian_pl. pocketsphinx-testdata's CMU test utterances
         (unnamed talkers) are held out too and not used.
  valid  checkpoint selection: every Danish source (tuxpaint's, klettres' and ktuberling's
         talkers) and ktuberling's Greek man (TALKERS, VALID_LANGUAGES), hedgewars Default_pl and
         Default_ru, and the festival voice czech_dita (a female TTS voice no other split uses).
  train  everything else: asterisk-prompt-it-menardi-wav (Italian, 8 kHz), asterisk-prompt-fr-
         armelle (French, 8 kHz GSM), klettres-data (19 languages), ktuberling-data (17 languages;
         not de, lt, ro, nor ktuberling's Russian man), tuxpaint-stamps-default's other talkers
         (bg, fr, ca, nl, ml, lt, English), the remaining hedgewars packs, festival voices and
         espeak-ng variants. TALKERS tells who they are and why some files are left out;
         `check_split` refuses a train or valid speaker that reads an eval speaker's file.

Why hedgewars is split this way: hedgewars does not document who voiced which pack (its credits
name one "hedgehogs voice" actor). The background noise of each pack's recordings (the spectrum of
its quietest frames) shows one recording setup shared by British, Classic, Default, Mobster,
Pirate, Russian, Singer, Surfer and Robot (pairwise correlation 0.86-0.97), so those are treated as
one possible speaker and all go to train. The localized packs were recorded elsewhere. Default_es
stands apart (gated to digital silence, Spanish); Default_uk and Russian_pl are the closest pair
of packs outside that cluster (cepstral mean distance 9.6), so they stay together, in eval.
Default_pl and Default_ru (similar setups to each other) are validation. HillBilly is ambiguous
(its voice is close to Surfer's) and goes to train. Robot is excluded: it is processed to a
monotone buzz (F0 spread 214-252 Hz) and would teach the model that a steady harmonic drone is
speech, the opposite of what hum and fan noise need. The game's grunts (Ooff, Ow, Jump, Laugh,
coughs) stay in train as vocalizations but are left out of the eval and valid utterances.

TTS: the eval's own TTS set (corpus.py) speaks with flite slt/rms/awb/kal16/kal
and espeak-ng variants f3, m3 (talkers) and Andrea, Adam, f2, m4, f4, m7 (babble). None of those
voices is used here: no flite voice at all, no festival kal or slt voice, and those espeak variants
in no language. festival's Hindi/Marathi/Telugu NSK voices do not run with Debian's festival 2.5
and are not used; open-jtalk has no voice in Debian main. TTS is 15 % of the train audio (22 of
145 min), and data.py draws a TTS voice for only 30 % of clips: espeak-ng is a formant synthesizer,
and RNNoise's collapse on it (issue #13) shows how far such voices are from people.

Amounts after trimming, measured before DRY_TALKERS and ktuberling's Russian woman left train and
valid (three klettres talkers of letters, a few minutes; `python3 -m hear_training.speech` prints
today's): train 112 speakers, 123.3 min recorded (43.2 min of it with a top below
6 kHz, mostly the two 8 kHz asterisk voices) + 22.1 min TTS; valid 7 speakers, 11.9 min
recorded + 1.0 min TTS. The eval speakers: see `python3 -m hear_training.speech` (the tuxpaint
talkers are read at every 8th file, plenty for 2 utterances each).

Training utterances are 2-5 s: short prompts of one speaker joined with short pauses.

    python3 -m hear_training.speech [--split S]   builds the cache (first run: a few minutes) and prints the split table
"""

import argparse
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, replace

import numpy as np
from scipy import signal

RATE = 48000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# HEAR_TRAIN_CACHE: elsewhere (the accelerator's run unpacks the training bank into a cache of its
# own: bank.py).
CACHE = os.environ.get("HEAR_TRAIN_CACHE") or os.path.join(ROOT, ".build", "train-cache")
# The dialog lines pick.py scores checkpoints on (committed: sources.py --lines chose them).
PICK_LINES = os.path.join(ROOT, "training", "pick-lines-nl.txt")
VERSION = 2  # bump to rebuild the per-speaker caches

# What the sources need is listed in training/debian-packages; `make train` installs them.
RESERVED = re.compile(r"^asterisk-core-sounds")


@dataclass(frozen=True)
class Speaker:
    name: str       # unique, used in manifests and cache names
    kind: str       # "recorded" or "tts"
    language: str
    split: str      # "train", "valid", "eval" or "pick" (pick.py's continuous speech: never trained on)
    rate: int       # the source's own sample rate (its bandwidth is rate / 2)
    source: tuple   # ("package", package, exclude-regex) | ("files", package, include-regex, exclude-regex, stride)
                    # | ("lines", package, list file: one path a line)
                    # | ("hedgewars", pack) | ("festival", voice, encoding) | ("espeak", voice)
    texts: str = ""  # language key into TEXTS, for TTS
    # Sources whose files hold one short sound in a long stretch of the recording's noise floor
    # (klettres): trimmed to the frames this many dB above the file's floor (its 10th-percentile
    # 10 ms frame), and a file whose floor lies within 30 dB of its loudest frame is left out.
    gate_db: float = 0.0
    # Everything outside the speech set to digital silence (`gate`): the deciding talkers, whose
    # recordings keep a floor 20-50 dB below the speech between words.
    gated: bool = False
    # A training target: dry speech without its recording's floor (`dry_prompt`): every recorded
    # training and validation talker.
    dry: bool = False


# --- texts for the TTS voices (written for this file; not the eval's Harvard sentences) ---

TEXTS = {
    "en": [
        "Can you hear me now, or should I call you back from the other room?",
        "I'm sharing my screen, tell me when you can see the spreadsheet.",
        "Sorry, I was on mute for the first part of that.",
        "Let's move the review to Thursday afternoon if that works for everyone.",
        "The build failed again last night, but only on the slow machine.",
        "My daughter starts school next week, so mornings will be busy.",
        "Could you repeat the last number? The line cut out for a second.",
        "We measured it twice and the results were almost the same.",
        "I think the printer on the second floor is out of paper again.",
        "The train was late, so I walked the last two miles in the rain.",
        "Please send me the draft before lunch and I'll read it on the way.",
        "Honestly, I have no idea why the test passes on my laptop.",
        "There is a bakery near the station that opens at six.",
        "Turn left after the bridge and park behind the blue building.",
        "We need three more volunteers for the weekend shift.",
        "The meeting ran long, and nobody remembered to take notes.",
        "If the numbers hold, we can ship the update at the end of the month.",
        "I'll be back in five minutes, someone is at the door.",
        "Her brother fixed the old radio with a paper clip and some tape.",
        "Is it just me, or is there an echo on this call?",
    ],
    "it": [
        "Mi senti adesso, oppure ti richiamo dall'altra stanza?",
        "Domani mattina passo in ufficio a prendere i documenti.",
        "Il treno era in ritardo e sono arrivato a casa molto tardi.",
        "Scusa, ero in muto per la prima parte della riunione.",
        "Possiamo spostare l'incontro a giovedì pomeriggio?",
        "Mia sorella ha comprato una bicicletta nuova per andare al lavoro.",
        "La connessione oggi è molto migliore di ieri.",
        "Ripeti l'ultimo numero, per favore, non ho capito bene.",
        "Al mercato c'erano pomodori, pesche e un formaggio buonissimo.",
        "Ti mando il documento prima di pranzo, così lo leggi con calma.",
        "Dopo il ponte gira a sinistra e parcheggia dietro la chiesa.",
        "Abbiamo bisogno di altre tre persone per il turno di sabato.",
    ],
    "ca": [
        "Em sents ara, o et torno a trucar des de l'altra habitació?",
        "Demà al matí passaré per l'oficina a buscar els papers.",
        "El tren anava amb retard i vaig arribar a casa molt tard.",
        "Perdona, tenia el micròfon silenciat al principi de la reunió.",
        "Podem moure la reunió a dijous a la tarda?",
        "La meva germana s'ha comprat una bicicleta per anar a treballar.",
        "Avui la connexió és molt millor que ahir.",
        "Em pots repetir l'últim número, si us plau?",
        "Al mercat hi havia tomàquets, préssecs i un formatge molt bo.",
        "T'envio el document abans de dinar perquè el llegeixis amb calma.",
        "Després del pont gira a l'esquerra i aparca darrere l'església.",
        "Necessitem tres persones més per al torn de dissabte.",
    ],
    "cs": [
        "Slyšíte mě teď, nebo vám mám zavolat z druhé místnosti?",
        "Zítra ráno se zastavím v kanceláři pro ty papíry.",
        "Vlak měl zpoždění, a tak jsem přišel domů pozdě večer.",
        "Promiňte, na začátku schůzky jsem měl vypnutý mikrofon.",
        "Můžeme poradu přesunout na čtvrtek odpoledne?",
        "Moje sestra si koupila nové kolo, aby mohla jezdit do práce.",
        "Dnes je spojení mnohem lepší než včera.",
        "Zopakujte mi prosím to poslední číslo.",
        "Na trhu měli rajčata, broskve a výborný sýr.",
        "Pošlu vám ten dokument před obědem, abyste si ho mohl v klidu přečíst.",
        "Za mostem odbočte doleva a zaparkujte za kostelem.",
        "Na sobotní směnu potřebujeme ještě tři lidi.",
        "Včera večer jsme dlouho seděli na zahradě a povídali si.",
        "Ten starý počítač je pomalý, ale pořád funguje.",
        "V neděli pojedeme k babičce na chatu.",
        "Kdo zapomněl vypnout světlo v kuchyni?",
        "Letos v zimě napadlo hodně sněhu.",
        "Kniha, kterou jsi mi půjčil, je opravdu napínavá.",
    ],
    "ru": [
        "Вы меня сейчас слышите, или мне перезвонить из другой комнаты?",
        "Завтра утром я зайду в офис за документами.",
        "Поезд опоздал, и я пришёл домой очень поздно.",
        "Извините, в начале встречи у меня был выключен микрофон.",
        "Можно перенести совещание на четверг после обеда?",
        "Моя сестра купила новый велосипед, чтобы ездить на работу.",
        "Сегодня связь гораздо лучше, чем вчера.",
        "Повторите, пожалуйста, последнюю цифру.",
        "На рынке были помидоры, персики и очень вкусный сыр.",
        "Я пришлю вам документ до обеда, чтобы вы спокойно его прочитали.",
        "После моста поверните налево и припаркуйтесь за церковью.",
        "Нам нужны ещё три человека на субботнюю смену.",
    ],
    "fi": [
        "Kuuletko minut nyt, vai soitanko sinulle toisesta huoneesta?",
        "Huomenna aamulla haen paperit toimistolta.",
        "Juna oli myöhässä, ja tulin kotiin vasta illalla.",
        "Anteeksi, mikrofonini oli kiinni kokouksen alussa.",
        "Voimmeko siirtää palaverin torstai-iltapäivään?",
        "Siskoni osti uuden polkupyörän työmatkoja varten.",
        "Yhteys on tänään paljon parempi kuin eilen.",
        "Toistaisitko viimeisen numeron, kiitos.",
        "Torilla oli tomaatteja, persikoita ja tosi hyvää juustoa.",
        "Lähetän asiakirjan ennen lounasta, niin ehdit lukea sen rauhassa.",
        "Sillan jälkeen käänny vasemmalle ja pysäköi kirkon taakse.",
        "Tarvitsemme vielä kolme ihmistä lauantain vuoroon.",
    ],
    "de": [
        "Hörst du mich jetzt, oder soll ich dich aus dem anderen Zimmer anrufen?",
        "Morgen früh hole ich die Unterlagen im Büro ab.",
        "Der Zug hatte Verspätung, deshalb war ich erst spät zu Hause.",
        "Entschuldigung, am Anfang der Besprechung war mein Mikrofon aus.",
        "Können wir das Treffen auf Donnerstagnachmittag verschieben?",
        "Meine Schwester hat sich ein neues Fahrrad für den Arbeitsweg gekauft.",
        "Die Verbindung ist heute viel besser als gestern.",
        "Kannst du die letzte Zahl bitte noch einmal sagen?",
    ],
    "fr": [
        "Tu m'entends maintenant, ou je te rappelle depuis l'autre pièce ?",
        "Demain matin je passe au bureau chercher les papiers.",
        "Le train avait du retard et je suis rentré très tard.",
        "Pardon, mon micro était coupé au début de la réunion.",
        "On peut déplacer la réunion à jeudi après-midi ?",
        "Ma sœur a acheté un nouveau vélo pour aller au travail.",
        "La connexion est bien meilleure aujourd'hui qu'hier.",
        "Tu peux répéter le dernier chiffre, s'il te plaît ?",
    ],
    "es": [
        "¿Me oyes ahora, o te llamo desde la otra habitación?",
        "Mañana por la mañana paso por la oficina a buscar los papeles.",
        "El tren llegó tarde y volví a casa muy tarde.",
        "Perdona, tenía el micrófono apagado al principio de la reunión.",
        "¿Podemos pasar la reunión al jueves por la tarde?",
        "Mi hermana se compró una bicicleta nueva para ir al trabajo.",
        "Hoy la conexión es mucho mejor que ayer.",
        "¿Puedes repetir el último número, por favor?",
    ],
    "pt": [
        "Você está me ouvindo agora, ou eu ligo do outro quarto?",
        "Amanhã de manhã eu passo no escritório para pegar os papéis.",
        "O trem atrasou e eu cheguei em casa muito tarde.",
        "Desculpe, meu microfone estava desligado no começo da reunião.",
        "Podemos mudar a reunião para quinta à tarde?",
        "Minha irmã comprou uma bicicleta nova para ir ao trabalho.",
        "A conexão hoje está muito melhor do que ontem.",
        "Pode repetir o último número, por favor?",
    ],
    "pl": [
        "Słyszysz mnie teraz, czy mam zadzwonić z drugiego pokoju?",
        "Jutro rano wpadnę do biura po dokumenty.",
        "Pociąg się spóźnił i wróciłem do domu bardzo późno.",
        "Przepraszam, na początku spotkania miałem wyłączony mikrofon.",
        "Czy możemy przenieść spotkanie na czwartek po południu?",
        "Moja siostra kupiła nowy rower, żeby jeździć do pracy.",
        "Dzisiaj połączenie jest dużo lepsze niż wczoraj.",
        "Możesz powtórzyć ostatnią liczbę?",
    ],
    "nl": [
        "Hoor je me nu, of zal ik je vanuit de andere kamer bellen?",
        "Morgenochtend haal ik de papieren op kantoor op.",
        "De trein had vertraging en ik was pas laat thuis.",
        "Sorry, aan het begin van de vergadering stond mijn microfoon uit.",
        "Kunnen we de vergadering naar donderdagmiddag verplaatsen?",
        "Mijn zus heeft een nieuwe fiets gekocht om naar haar werk te gaan.",
        "De verbinding is vandaag veel beter dan gisteren.",
        "Kun je het laatste getal nog een keer zeggen?",
    ],
}

# espeak-ng variants used by corpus.py (TALKERS and BABBLERS): never here.
EVAL_ESPEAK_VARIANTS = {"f3", "m3", "Andrea", "Adam", "f2", "m4", "f4", "m7"}
# (variant, espeak language, text language). Robotic, whispered, croaking and "demonic" variants
# are left out: they are not voices a call carries.
ESPEAK_TRAIN = [
    ("m1", "en-us", "en"), ("m2", "en-gb", "en"), ("m5", "de", "de"), ("m6", "fr-fr", "fr"),
    ("m8", "es", "es"), ("f1", "it", "it"), ("f5", "en-us", "en"), ("klatt", "en-gb", "en"),
    ("klatt3", "nl", "nl"), ("klatt4", "pl", "pl"), ("Alicia", "es", "es"), ("Annie", "en-us", "en"),
    ("aunty", "en-gb", "en"), ("belinda", "pt-br", "pt"), ("benjamin", "fr-fr", "fr"), ("david", "en-us", "en"),
    ("ed", "de", "de"), ("edward", "en-gb", "en"), ("Gene", "en-us", "en"), ("iven", "cs", "cs"),
    ("john", "en-us", "en"), ("linda", "en-gb", "en"), ("max", "de", "de"), ("Michael", "en-us", "en"),
    ("norbert", "de", "de"), ("paul", "en-gb", "en"), ("pedro", "es", "es"), ("quincy", "en-us", "en"),
    ("rob", "en-gb", "en"), ("robert", "nl", "nl"), ("steph", "fr-fr", "fr"), ("travis", "en-us", "en"),
    ("victor", "ru", "ru"), ("zac", "en-us", "en"), ("grandma", "en-gb", "en"), ("grandpa", "en-us", "en"),
    ("anika", "de", "de"), ("Mr", "en-gb", "en"), ("Diogo", "pt", "pt"), ("Lee", "en-us", "en"),
    ("shelby", "en-us", "en"), ("caleb", "en-gb", "en"), ("Alex", "pl", "pl"), ("Andy", "en-us", "en"),
    ("Hugo", "fr-fr", "fr"), ("marcelo", "es-419", "es"), ("antonio", "it", "it"), ("miguel", "es", "es"),
]
assert not EVAL_ESPEAK_VARIANTS & {v for v, _, _ in ESPEAK_TRAIN}
ESPEAK_SENTENCES = 5  # per variant

HEDGEWARS_SPLIT = {
    "Default_es": "eval", "Default_uk": "eval", "Russian_pl": "eval",
    "Default_pl": "valid", "Default_ru": "valid",
    "British": "train", "Classic": "train", "Default": "train", "HillBilly": "train", "Mobster": "train",
    "Pirate": "train", "Russian": "train", "Singer": "train", "Surfer": "train",
    # "Robot": excluded (processed, see above)
}
HEDGEWARS_LANGUAGE = {"Default_es": "es", "Default_uk": "uk", "Russian_pl": "pl", "Default_pl": "pl",
                      "Default_ru": "ru"}
# Hedgewars lines that are not words.
NONVERBAL = re.compile(r"^(Ooff|Ow|Jump|Laugh|Poison|Firepunch|Hmm|Whoopsee)", re.I)


# The home talkers (the deciding set until issue #34) besides the LibriVox reader: people reading words, each one voice (one F0
# range, one recording setup), wideband, and kept intact by RNNoise (clean SI-SDR >= 10 dB), but
# recorded at home: their floor lies 20-38 dB below the speech (sources.py), and RNNoise's clean-input
# PESQ-WB on them is 2.3-3.3. training/README.md has the probe of every candidate.
#   tuxpaint-stamps-default: spoken names of the stamps, one contributor per language (its changelog
#     names Belarusian Ksenya Buraya, Spanish Estefania Ortiz, Greek Kiriaki Serafeim, Romanian
#     Tabbytha, Russian Edwin Veber), 44.1 kHz, speech up to 9-20 kHz. Stamps under symbols/
#     (letters, digits, operators) are left out: in several languages other people recorded them.
#     Every 8th file is plenty for the eval's utterances and keeps the decoding short.
#   ktuberling-data: German and Lithuanian words (parts of the body, clothes, things), one man
#     each, 44.1 kHz. (klettres-data's letters are held as single sounds within long quiet files,
#     2 s each: a stream of them is mostly the recording's noise floor, not speech.)
# (name, language, package, files matching, files left out, every n-th file)
HOME_TALKERS = [
    ("tuxpaint-be", "be", "tuxpaint-stamps-default", r"_desc_be\.ogg$", r"/stamps/symbols/", 8),
    ("tuxpaint-el", "el", "tuxpaint-stamps-default", r"_desc_el\.ogg$", r"/stamps/symbols/", 8),
    ("tuxpaint-es", "es", "tuxpaint-stamps-default", r"_desc_es\.ogg$", r"/stamps/symbols/", 8),
    ("tuxpaint-ro", "ro", "tuxpaint-stamps-default", r"_desc_ro\.ogg$", r"/stamps/symbols/", 8),
    ("tuxpaint-ru", "ru", "tuxpaint-stamps-default", r"_desc_ru\.ogg$", r"/stamps/symbols/", 8),
    ("ktuberling-de", "de", "ktuberling-data", r"/ktuberling/sounds/de/", None, 1),
    ("ktuberling-lt", "lt", "ktuberling-data", r"/ktuberling/sounds/lt/", None, 1),
]


# More recorded talkers for training and validation, none of them an eval speaker. Who they are
# (credits in the packages' documentation and the files' tags) and why some are left out:
#   klettres-data: letters and syllables, one or two people per language (en Robert Wadley, en_GB
#     a woman, de Helmut Kriege (ktuberling's German files, an eval talker, are by Helmut Pozimski),
#     lt Liudas Ališauskas (ktuberling's Lithuanian eval talker is Donatas Glodenis), ru Dashk0 (a
#     woman; tuxpaint's Russian eval talker is a man), es Ana Belén Caballero and Juan Pedro Paredes,
#     fr Ludovic Grossard, it Pietro Pasotti, cs Eva Mikulčíková, nl Geert Stams, da Erik Kjaer
#     Pedersen, he Assaf Gorgon, nds and pt_BR two each; ar, hu, ml, nb, tn, uk uncredited).
#     Each file is one sound in ~2 s of noise floor: gated (Speaker.gate_db).
#   ktuberling-data: words, one voice per language (ca several people, da Martha Schou and others,
#     el clavisound.gr, wa Djan Cayron, en John Calhoun's originals); es, fi, it, nds, pt, sv are
#     8 kHz files, ca mostly 22 kHz, fr and nl partly 8 kHz (every prompt keeps its own rate, see
#     Prompts.rates). Left out: de and lt (eval talkers); ro (a Romanian woman with the pitch of
#     tuxpaint's Romanian eval talker, who may have recorded both); the Russian man (the older
#     files: ball, bow, ..., egypt_*, moon_*, pizzeria_*; a Russian man with the pitch of
#     tuxpaint's Russian eval talker), so ktuberling-ru is the woman of the newer files only;
#     nn (Opus, which sox does not read); sr@ijekavian, sr@ijekavianlatin, sr@latin (copies of sr).
#   tuxpaint-stamps-default: the stamp descriptions of the talkers that are not eval talkers
#     (bg Krasimir Petkov, fr PaulK, ca Pere Pujal, da Joe Dalton, nl, ml, and the English
#     `_desc.ogg` files), outside symbols/ as for the eval talkers (other people recorded letters
#     and digits there); lt is only in symbols/ (the Lithuanian alphabet, Andrius Jurkus).
# Split by language: one language's sources may share a person (KDE translators record for
# several programs), so a language goes whole to train or to valid. Valid holds Danish (tuxpaint's
# Joe Dalton, klettres' Erik Kjaer Pedersen, ktuberling's Martha Schou and others) and Greek
# (ktuberling's man; the Greek eval talker is a woman). (name, language, package, include,
# exclude, stride, nominal rate, split, gate_db)
KLETTRES = ["ar", "cs", "da", "de", "en", "en_GB", "es", "fr", "he", "hu", "it", "lt", "ml", "nb", "nds", "nl",
            "pt_BR", "ru", "tn", "uk"]
KTUBERLING = {"ca": 22050, "da": 44100, "el": 44100, "en": 44100, "es": 8000, "fi": 8000, "fr": 44100, "ga": 44100,
              "gl": 44100, "it": 8000, "nds": 8000, "nl": 8000, "pt": 8000, "ru": 44100, "sl": 44100, "sr": 22050,
              "sv": 8000, "uk": 44100, "wa": 44100}
TUXPAINT = {"bg": r"_desc_bg\.ogg$", "fr": r"_desc_fr\.ogg$", "ca": r"_desc_ca\.ogg$", "da": r"_desc_da\.ogg$",
            "nl": r"_desc_nl\.ogg$", "ml": r"_desc_ml\.ogg$", "en": r"_desc\.ogg$"}
VALID_LANGUAGES = {"da", "el"}
# The deciding set's talkers (sources.py measured every recorded talker: these are the wideband ones
# whose gated speech RNNoise passes at PESQ-WB >= 3.5 in the evaluation's utterances, the sign of a
# dry reference): klettres' Danish (Erik Kjaer Pedersen), Lithuanian (Liudas Ališauskas) and Russian
# (Dashk0, a woman) letters and syllables. (tuxpaint's Catalan passed the probe but most of its files
# stop at 4 kHz; tuxpaint's Bulgarian passed the probe at 3.51 and scored 2.74 in the evaluation's
# utterances.) They were training (and Danish validation) talkers: the committed model was trained
# on them, and the next `make train` is not. Held out with them, unused, because one person may have
# recorded both: ktuberling's Russian woman.
DRY_TALKERS = ["klettres-da", "klettres-lt", "klettres-ru"]
HELD_WITH_DRY = ["ktuberling-ru"]
TALKERS = [
    *((f"klettres-{lang}", lang.split("_")[0], "klettres-data", rf"/klettres/{lang}/(alpha|syllab)/", None, 1, 44100,
       "valid" if lang in VALID_LANGUAGES else "train", 12.0) for lang in KLETTRES),
    *((f"ktuberling-{lang}", lang, "ktuberling-data", rf"/ktuberling/sounds/{lang}/", None, 1, rate,
       "valid" if lang in VALID_LANGUAGES else "train", 0.0) for lang, rate in KTUBERLING.items() if lang != "ru"),
    ("ktuberling-ru", "ru", "ktuberling-data", r"/ktuberling/sounds/ru/(tux-|[a-z]+-tux\.|xmas_|tv_)",
     r"/tv_(bicycle|car|cyclist|train|tree)\.ogg$", 1, 44100, "train", 0.0),
    *((f"tuxpaint-{lang}", lang, "tuxpaint-stamps-default", include, r"/stamps/symbols/", 1, 44100,
       "valid" if lang in VALID_LANGUAGES else "train", 0.0) for lang, include in TUXPAINT.items()),
    ("tuxpaint-lt", "lt", "tuxpaint-stamps-default", r"/stamps/symbols/.*_desc_lt\.ogg$", None, 1, 44100, "train", 0.0),
]


def _speakers():
    s = [
        Speaker("asterisk-it-menardi", "recorded", "it", "train", 8000,
                ("package", "asterisk-prompt-it-menardi-wav", r"/silence/")),
        Speaker("asterisk-fr-armelle", "recorded", "fr", "train", 8000, ("package", "asterisk-prompt-fr-armelle", None)),
        Speaker("asterisk-es-co", "recorded", "es", "eval", 8000, ("package", "asterisk-prompt-es-co", None)),
        # One LibriVox reader (Sense and Sensibility); the CMU test utterances are other, unnamed talkers.
        Speaker("pocketsphinx-librivox", "recorded", "en", "eval", 16000,
                ("files", "pocketsphinx-testdata", r"/librivox/", None, 1)),
        Speaker("pocketsphinx-cmu", "recorded", "en", "eval", 16000,
                ("files", "pocketsphinx-testdata", r"\.(wav|raw)$", r"/librivox/", 1)),
    ]
    for name, language, package, include, exclude, stride in HOME_TALKERS:
        s.append(Speaker(name, "recorded", language, "eval", 44100, ("files", package, include, exclude, stride)))
    for name, language, package, include, exclude, stride, rate, split, gate in TALKERS:
        held = name in DRY_TALKERS or name in HELD_WITH_DRY
        s.append(Speaker(name, "recorded", language, "eval" if held else split, rate,
                         ("files", package, include, exclude, stride), gate_db=gate, gated=name in DRY_TALKERS))
    for pack, split in HEDGEWARS_SPLIT.items():
        s.append(Speaker(f"hedgewars-{pack}", "recorded", HEDGEWARS_LANGUAGE.get(pack, "en"), split, 44100,
                         ("hedgewars", pack)))
    festival = [  # (voice, language, rate, input encoding, split)
        ("ked_diphone", "en", 16000, "utf-8", "train"),
        ("lp_diphone", "it", 16000, "latin-1", "train"),
        ("pc_diphone", "it", 16000, "latin-1", "train"),
        ("upc_ca_ona_hts", "ca", 16000, "latin-1", "train"),
        ("czech_dita", "cs", 32000, "iso-8859-2", "valid"),
        ("czech_krb", "cs", 32000, "iso-8859-2", "train"),
        ("czech_machac", "cs", 32000, "iso-8859-2", "train"),
        ("czech_ph", "cs", 44100, "iso-8859-2", "train"),
        ("msu_ru_nsh_clunits", "ru", 16000, "utf-8", "train"),
        ("suo_fi_lj_diphone", "fi", 22050, "latin-1", "train"),
        ("hy_fi_mv_diphone", "fi", 22050, "latin-1", "train"),
    ]
    # Continuous speech for the checkpoint pick (pick.py, split "pick"): fillets-ng's Dutch dialog
    # lines (three or more characters, phrases) whose dry target RNNoise passes as dry speech
    # (sources.py --lines writes the list); no training, validation or eval speaker reads the package.
    s.append(Speaker("fillets-nl-dialog", "recorded", "nl", "pick", 22050, ("lines", "fillets-ng-data-nl", PICK_LINES)))
    for voice, language, rate, encoding, split in festival:
        s.append(Speaker(f"festival-{voice}", "tts", language, split, rate, ("festival", voice, encoding), language))
    for variant, language, texts in ESPEAK_TRAIN:
        s.append(Speaker(f"espeak-{language}+{variant}", "tts", texts, "train", 22050,
                         ("espeak", f"{language}+{variant}"), texts))
    return s


SPEAKERS = [replace(s, dry=s.kind == "recorded" and s.split != "eval") for s in _speakers()]
BY_NAME = {s.name: s for s in SPEAKERS}


def speakers(split=None, kind=None):
    return [s for s in SPEAKERS if (split is None or s.split == split) and (kind is None or s.kind == kind)]


# --- decoding ---

def package_files(package, exclude=None, extensions=(".wav", ".gsm", ".ogg", ".raw")):
    """Audio files of one installed package, by `dpkg -L` (never by globbing a shared tree)."""
    if RESERVED.match(package):
        raise ValueError(f"{package} is reserved for independent evaluation")
    listing = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
    if listing.returncode != 0:
        raise RuntimeError(f"{package} is not installed: apt-get install --no-install-recommends {package}")
    out = listing.stdout
    files = sorted(line for line in out.splitlines()
                   if line.lower().endswith(extensions) and os.path.isfile(line)
                   and not (exclude and re.search(exclude, line)))
    if not files:
        raise RuntimeError(f"no audio in {package}: apt-get install {package}")
    return files


def listed_files(package, listing):
    """The files a list names (one path a line, # comments), each checked to be the package's."""
    with open(listing) as f:
        wanted = [line.split("#")[0].strip() for line in f]
    wanted = [w for w in wanted if w]
    owned = set(package_files(package, None, (".wav", ".gsm", ".raw", ".ogg")))
    strangers = [w for w in wanted if w not in owned]
    if strangers:
        raise RuntimeError(f"{listing}: {strangers[0]} is not a file of {package}")
    return wanted


def _key(*parts):
    return hashlib.sha1("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def decode(path):
    """One file as float32 mono at 48 kHz (cached; sox does the decoding and resampling)."""
    target = os.path.join(CACHE, "decoded", _key(path, os.path.getmtime(path)) + ".f32")
    if not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        source = ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", path] if path.endswith(".raw") else [path]
        # 6 dB of headroom for the resampler's overshoot on full-scale game audio; levels are set later anyway.
        subprocess.run(["sox", "-q", *source, "-t", "raw", "-e", "floating-point", "-b", "32", "-L", target + ".tmp",
                        "channels", "1", "gain", "-6", "rate", "-v", str(RATE)], check=True)
        os.replace(target + ".tmp", target)
    return np.fromfile(target, dtype="<f4")


def synthesize(speaker, text):
    """One TTS prompt as a file in the cache (its path)."""
    engine = speaker.source[0]
    path = os.path.join(CACHE, "tts", f"{speaker.name}-{_key(text)}.wav".replace("+", "_"))
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if engine == "espeak":
        # A little speed and pitch spread per sentence, deterministic from the text.
        h = int(_key(speaker.name, text), 16)
        speed, pitch = 135 + h % 40, 35 + (h >> 8) % 30
        subprocess.run(["espeak-ng", "-v", speaker.source[1], "-s", str(speed), "-p", str(pitch),
                        "-w", path + ".tmp.wav", text], check=True, capture_output=True)
    else:
        _, voice, encoding = speaker.source
        subprocess.run(["text2wave", "-eval", f"(voice_{voice})", "-o", path + ".tmp.wav"],
                       input=text.encode(encoding), check=True, capture_output=True)
    os.replace(path + ".tmp.wav", path)
    return path


# A gated file (Speaker.gate_db) whose noise floor lies within this many dB of its loudest frame is
# a noisy recording, left out.
GATE_FLOOR_DB = -30.0


def frame_energy(x, frame=RATE // 100):
    """Mean square per whole 10 ms frame (a partial last frame left out)."""
    n = len(x) // frame
    return np.mean(x[: n * frame].reshape(n, frame) ** 2, axis=1)


def gate(x, above_floor_db=12.0, below_speech_db=35.0, before=3, after=8, fade=0.005):
    """Everything outside the speech set to zero, the one treatment a reference with a floor gets
    (the floor under the speech stays): 10 ms frames above both the file's floor (its 10th-
    percentile audible frame) + `above_floor_db` and its active level - `below_speech_db` count as
    speech, widened by `before` and `after` frames (a word's onset and decay), single frames
    dropped, `fade` s raised-cosine ramps at each edge."""
    from scipy import ndimage
    x = np.asarray(x, dtype=np.float64)
    frame = RATE // 100
    e = frame_energy(x, frame)
    n = len(e)
    audible = e[e > 1e-10]
    if len(audible) == 0:
        return np.zeros_like(x)
    active = e[e > e.max() * 1e-4]
    threshold = max(10 * np.log10(np.percentile(audible, 10)) + above_floor_db,
                    10 * np.log10(np.mean(active)) - below_speech_db)
    speech_ = ndimage.binary_opening(10 * np.log10(e + 1e-30) > threshold, np.ones(2))
    speech_ = ndimage.binary_dilation(speech_, np.ones(before + after + 1), origin=(before - after) // 2)
    g = np.concatenate([np.repeat(speech_.astype(float), frame), np.zeros(len(x) - n * frame)])
    k = int(fade * RATE)
    ramp = np.hanning(2 * k + 1)
    return x * np.convolve(g, ramp / ramp.sum(), mode="same")


def file_floor_db(x):
    """A recording's floor: its quietest 50 ms (10 ms hop; digital silence and the first and last
    50 ms, where files fade, left out) against its active speech level (the 10 ms frames within
    40 dB of the loudest), dB; NaN for a file too short or all digital silence."""
    e = frame_energy(x)
    if len(e) < 15 or e.max() <= 1e-10:
        return float("nan")
    level = 10 * np.log10(np.mean(e[e > e.max() * 1e-4]))
    e = e[5:-5]
    window = np.convolve(e, np.ones(5) / 5, mode="valid")
    whole = np.convolve((e > 1e-10).astype(float), np.ones(5), mode="valid") == 5  # -100 dBFS: not a floor
    if not whole.any():
        return float("nan")
    return float(10 * np.log10(window[whole].min()) - level)


# A training target's floor must lie at least this far below its speech (file_floor_db) once
# `remove_floor` has run; a file it cannot bring there is left out.
DRY_FLOOR_DB = -40.0
# remove_floor: the floor's spectrum is the mean of the quietest FLOOR_SHARE of a file's audible
# STFT frames; power subtraction of OVERSUBTRACT x that spectrum, the gain never below
# FLOOR_GAIN_DB (a floor 30 dB down ends 55 dB down; deeper cuts leave a target full of holes).
FLOOR_SHARE = 0.1
OVERSUBTRACT = 3.0
FLOOR_GAIN_DB = -30.0


def remove_floor(x):
    """The recording's steady floor (hiss, hum, room tone) taken out of a whole file by spectral
    subtraction against its own quiet frames (21 ms Hann frames, 75 % overlap; the power smoothed
    over three frames first, so the gain does not flutter where speech and floor meet). What a
    microphone's floor 20-38 dB under the speech does to a target: the model learns that such a
    floor is speech and keeps a steady noise that looks like it."""
    x = np.asarray(x, dtype=np.float64)
    size = 1024
    if len(x) < 4 * size:
        return x
    _, _, z = signal.stft(x, nperseg=size, noverlap=3 * size // 4)
    power = np.abs(z) ** 2
    energy = power.sum(axis=0)
    audible = np.nonzero(energy > energy.max() * 1e-10)[0]
    if len(audible) < 10:
        return x
    quiet = audible[np.argsort(energy[audible])[: max(3, int(FLOOR_SHARE * len(audible)))]]
    floor = power[:, quiet].mean(axis=1, keepdims=True)
    smoothed = signal.convolve(power, np.ones((1, 3)) / 3, mode="same")
    gain = np.sqrt(np.maximum(1 - OVERSUBTRACT * floor / np.maximum(smoothed, 1e-30), 0))
    gain = np.maximum(gain, 10 ** (FLOOR_GAIN_DB / 20))
    _, y = signal.istft(z * gain, nperseg=size, noverlap=3 * size // 4)
    return y[: len(x)]


def dry_target(x):
    """A training target from a decoded file and the floor it keeps (dB, `file_floor_db`): its floor
    removed (`remove_floor`), everything outside the speech set to zero (`gate`); the target is None
    where the floor stays within DRY_FLOOR_DB of the speech."""
    y = remove_floor(x)
    floor = file_floor_db(y)
    return (None if floor > DRY_FLOOR_DB else gate(y)), floor


def dry_prompt(x):
    """`dry_target`'s target alone."""
    return dry_target(x)[0]


def trim(x, floor_db=-35.0, margin=0.02, fade=0.005, gate_db=0.0):
    """Leading and trailing silence off: 10 ms frames within floor_db of the loudest, plus a
    margin; short fades so that a cut never clicks. DC removed. With gate_db, only frames that many
    dB above the file's noise floor (its 10th-percentile frame) count as sound, and a file whose
    floor is within GATE_FLOOR_DB of its loudest frame comes back empty."""
    x = x.astype(np.float64)
    x -= np.mean(x)
    frame = RATE // 100
    n = len(x) // frame
    if n == 0:
        return x[:0]
    energy = np.mean(x[: n * frame].reshape(n, frame) ** 2, axis=1)
    if energy.max() <= 1e-12:
        return x[:0]
    threshold = energy.max() * 10 ** (floor_db / 10)
    if gate_db:
        floor = np.percentile(energy, 10)
        if floor > energy.max() * 10 ** (GATE_FLOOR_DB / 10):
            return x[:0]
        threshold = max(threshold, floor * 10 ** (gate_db / 10))
    active = np.nonzero(energy > threshold)[0]
    first = max(0, active[0] * frame - int(margin * RATE))
    last = min(len(x), (active[-1] + 1) * frame + int(margin * RATE))
    y = x[first:last].copy()
    k = min(int(fade * RATE), len(y) // 2)
    ramp = np.linspace(0.0, 1.0, k, endpoint=False)
    y[:k] *= ramp
    y[len(y) - k:] *= ramp[::-1]
    return y


def source_rate(path):
    """A file's own sample rate (the .raw files are 16 kHz)."""
    if path.endswith(".raw"):
        return 16000
    out = subprocess.run(["soxi", "-r", path], capture_output=True, text=True, check=True)
    return int(float(out.stdout.strip()))


# A prompt's top: the highest frequency at which its power spectrum (smoothed over ~200 Hz) lies
# within this many dB of its peak below 4 kHz. It finds band limits (8 kHz files: 3.8-3.9 kHz, MP3
# low-passes: 7.5 and 16 kHz, the band-limited tuxpaint-ca files: 3.6-9 kHz) and the natural roll-off
# of a voice (10-21 kHz in wideband files); above it, the speech holds nothing a mixture could show.
TOP_DROP_DB = 60.0


def band_top(x, rate):
    """The prompt's top (Hz): at most its source's Nyquist frequency and RATE / 2."""
    nyquist = min(rate, RATE) / 2
    if len(x) < 2048:
        return float(nyquist)
    f, p = signal.welch(x, RATE, nperseg=2048)
    level = 10 * np.log10(p + 1e-30)
    level = np.convolve(np.pad(level, 4, mode="edge"), np.ones(9) / 9, mode="valid")
    reference = np.max(level[(f > 100) & (f < 4000)])
    above = np.nonzero(level > reference - TOP_DROP_DB)[0]
    return float(min(nyquist, round(f[above[-1]], -1))) if len(above) else float(nyquist)


def _sources(speaker):
    """(name, path) per prompt; TTS prompts are synthesized on the way."""
    kind = speaker.source[0]
    if kind == "package":
        _, package, exclude = speaker.source
        return [(os.path.relpath(p, "/usr/share"), p) for p in package_files(package, exclude, (".wav", ".gsm", ".raw"))]
    if kind == "files":
        _, package, include, exclude, stride = speaker.source
        chosen = [p for p in package_files(package, exclude, (".wav", ".gsm", ".raw", ".ogg")) if re.search(include, p)]
        return [(os.path.relpath(p, "/usr/share"), p) for p in chosen[::stride]]
    if kind == "lines":
        _, package, listing = speaker.source
        return [(os.path.relpath(p, "/usr/share"), p) for p in listed_files(package, listing)]
    if kind == "hedgewars":
        pack = speaker.source[1]
        return [(os.path.basename(p)[:-4], p) for p in package_files("hedgewars-data", None, (".ogg",))
                if os.path.basename(os.path.dirname(p)) == pack and "/Sounds/voices/" in p]
    texts = TEXTS[speaker.texts]
    if kind == "espeak":
        start = sum(ord(c) for c in speaker.name) % len(texts)
        texts = [texts[(start + i) % len(texts)] for i in range(min(ESPEAK_SENTENCES, len(texts)))]
    return [(f"{i:02d}", synthesize(speaker, t)) for i, t in enumerate(texts)]


class Prompts:
    """One speaker's trimmed prompts, float32 at 48 kHz, concatenated (`audio`), with their
    bounds, names, source rates (`rates`: each file's own) and tops (`tops`, Hz: `band_top`).
    Cheap to share between forked workers."""

    def __init__(self, speaker, audio, bounds, names, rates, tops):
        self.speaker, self.audio, self.bounds, self.names = speaker, audio, bounds, names
        self.rates, self.tops = rates, tops

    def __len__(self):
        return len(self.bounds)

    def __getitem__(self, i):
        a, b = self.bounds[i]
        return self.audio[a:b].astype(np.float64)

    def seconds(self):
        return len(self.audio) / RATE


def cache_path(speaker):
    """Where `load` keeps a speaker's prompts (a listed speaker's: by its list's content too)."""
    listed = ""
    if speaker.source[0] == "lines":
        with open(speaker.source[2], "rb") as f:
            listed = "-" + hashlib.sha1(f.read()).hexdigest()[:8]
    return os.path.join(CACHE, "speakers", f"{speaker.name}{listed}{'-gated' if speaker.gated else ''}"
                        f"{'-dry' if speaker.dry else ''}-v{VERSION}.npz".replace("+", "_"))


def store(path, audio, lengths, names, rates, tops):
    """A speaker's prompt cache (what `load` reads): the prompts joined, each one's length, name,
    source rate and top; written whole, then renamed into place."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.savez(path + ".tmp.npz", audio=np.asarray(audio, dtype=np.float32), lengths=np.array(lengths, dtype=np.int64),
             names=np.array(names, dtype=str), rates=np.array(rates), tops=np.array(tops))
    os.replace(path + ".tmp.npz", path)


def load(speaker, min_seconds=0.15):
    """A speaker's prompts (built into the cache on first use)."""
    if isinstance(speaker, str):
        speaker = BY_NAME[speaker]
    path = cache_path(speaker)
    if not os.path.exists(path):
        prompts, names, rates, tops = [], [], [], []
        for name, source in _sources(speaker):
            y = decode(source)
            if speaker.dry:
                y = dry_prompt(y - np.mean(y))
                if y is None:
                    continue
            y = trim(y, gate_db=speaker.gate_db)
            if speaker.gated and len(y):
                y = trim(gate(y))
            if len(y) >= min_seconds * RATE:
                rate = source_rate(source)
                prompts.append(y.astype(np.float32))
                names.append(name)
                rates.append(rate)
                tops.append(band_top(y, rate))
        if not prompts and not speaker.dry:  # a dry talker may lose every file to DRY_FLOOR_DB
            raise RuntimeError(f"{speaker.name}: no usable prompt")
        store(path, np.concatenate(prompts or [np.zeros(0, np.float32)]), [len(p) for p in prompts], names, rates, tops)
    with np.load(path) as data:
        audio, lengths, names = data["audio"], data["lengths"], [str(n) for n in data["names"]]
        rates, tops = data["rates"], data["tops"]
    ends = np.cumsum(lengths)
    return Prompts(speaker, audio, np.stack([ends - lengths, ends], axis=1), names, rates, tops)


def prompts(speaker):
    """A speaker's prompts as float64 arrays, mono, 48 kHz."""
    p = load(speaker)
    return [p[i] for i in range(len(p))]


def check_split():
    """Raises if a file of an eval speaker (every file its rule matches, not only every n-th) is also
    a training or validation speaker's file."""
    def files(speaker):
        kind = speaker.source[0]
        if kind == "files":
            _, package, include, exclude, _ = speaker.source
            return {p for p in package_files(package, exclude, (".wav", ".gsm", ".raw", ".ogg")) if re.search(include, p)}
        if kind == "package":
            return set(package_files(speaker.source[1], speaker.source[2], (".wav", ".gsm", ".raw")))
        if kind == "lines":
            return set(listed_files(speaker.source[1], speaker.source[2]))
        return set()
    held = set().union(*(files(s) for s in speakers("eval", "recorded")))
    for s in speakers("train", "recorded") + speakers("valid", "recorded") + speakers("pick", "recorded"):
        shared = files(s) & held
        if shared:
            raise RuntimeError(f"{s.name} ({s.split}) reads eval files, e.g. {sorted(shared)[0]}")


def build_all(split=None, workers=2):
    """Decode/synthesize every speaker of a split (all splits by default) into the cache."""
    chosen = speakers(split)
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(2, workers)) as pool:
        return {p.speaker.name: p for p in pool.map(load, chosen)}


# --- utterances ---

def verbal(prompts_, i):
    """False for the hedgewars grunts (not words)."""
    return not (prompts_.speaker.source[0] == "hedgewars" and NONVERBAL.match(prompts_.names[i]))


def join(pieces, gaps):
    """Prompts with silences (seconds) between them."""
    out = [pieces[0]]
    for piece, gap in zip(pieces[1:], gaps):
        out += [np.zeros(int(gap * RATE)), piece]
    return np.concatenate(out)


def utterance(prompts_, rng, seconds=(2.0, 5.0), gap=(0.08, 0.3), verbal_only=False, order=None, used=None):
    """One utterance of 2-5 s: random prompts of one speaker joined by short pauses. A prompt
    longer than the upper bound is an utterance of its own. `order` (a list of prompt indices)
    makes the choice sequential instead of random: the first one that still fits is taken out.
    The indices of the prompts it holds are appended to `used` (a list), if given."""
    candidates = [i for i in range(len(prompts_)) if not verbal_only or verbal(prompts_, i)]
    target, limit = rng.uniform(*seconds) * RATE, seconds[1] * RATE
    pieces, gaps, total = [], [], 0
    while total < target:
        pause = rng.uniform(*gap) * RATE if pieces else 0
        if order is not None:
            # The first prompt in the order that still fits (any, for the first one).
            fits = [k for k, i in enumerate(order) if not pieces or total + pause + np.diff(prompts_.bounds[i])[0] <= limit]
            if not fits:
                break
            i = order.pop(fits[0])
        else:
            i = candidates[rng.integers(len(candidates))]
        piece = prompts_[i]
        if pieces and total + pause + len(piece) > limit:
            break
        if pieces:
            gaps.append(pause / RATE)
        pieces.append(piece)
        if used is not None:
            used.append(int(i))
        total += pause + len(piece)
    return join(pieces, gaps)


# The recorded-speech sets of `make eval`, a fixed recipe over the eval speakers, by group:
#   deciding    dry wideband speech: letters and syllables of three talkers (a woman, two men) in
#               three languages, gated to digital silence between them, four utterances each; the
#               set `make eval` decides on, where RNNoise passes the clean speech (PESQ-WB 3.6-4.3)
#               as it passes a dry microphone;
#   home        the deciding set until issue #34: wideband read sentences and words of eight talkers
#               (four women, four men) in eight languages, recorded at home with the floor and room
#               in the reference; reported apart;
#   narrowband  8 kHz telephone prompts (GSM), reported apart: with nothing above 4 kHz they are not
#               the wideband call the suppressor is for;
#   acted       hedgewars' game voices (shouted, processed), reported apart: RNNoise fails on them
#               (clean SI-SDR below 0 dB), so a mean with them measures that failure.
# (speaker, utterances, group).
EVAL_UTTERANCES = [
    *((name, 4, "deciding") for name in DRY_TALKERS),
    ("pocketsphinx-librivox", 2, "home"),
    *((name, 2, "home") for name, *_ in HOME_TALKERS),
    ("asterisk-es-co", 3, "narrowband"),
    ("hedgewars-Default_es", 2, "acted"), ("hedgewars-Default_uk", 2, "acted"), ("hedgewars-Russian_pl", 2, "acted"),
]
EVAL_GROUPS = ("deciding", "home", "narrowband", "acted")
EVAL_SEED = 31337
# Seconds per utterance: the deciding talkers' utterances are longer (their prompts are single words
# or short sentences of up to 7 s); the others keep their recipe.
EVAL_SECONDS = {"deciding": (2.5, 7.0), "home": (2.5, 7.0), "narrowband": (2.5, 5.0), "acted": (2.5, 5.0)}
# A deciding utterance must carry speech above 4 kHz: its power there at most this far below its
# whole power (the deciding utterances measure -8 to -26 dB, the 8 kHz prompts below -90 dB).
WIDEBAND_DB = -35.0


def high_band_db(x, cutoff=4000.0):
    """Power above `cutoff` against the whole power of a 48 kHz signal (dB)."""
    f, power = signal.welch(x, RATE, nperseg=2048)
    return float(10 * np.log10(max(power[f > cutoff].sum(), 1e-30) / max(power.sum(), 1e-30)))


def eval_utterances(groups=EVAL_GROUPS):
    """[(talker, group, float64 48 kHz utterance)] for `make eval`, deterministic: per speaker, its
    prompts in a fixed shuffled order, joined with 0.15-0.25 s pauses into utterances of
    EVAL_SECONDS (a longer single prompt stays whole). Words or names of a few tenths of a second to
    2 s become one utterance of several of them, as a person reads a list."""
    out = []
    for name, count, group in EVAL_UTTERANCES:
        if group not in groups:
            continue
        speaker = BY_NAME[name]
        assert speaker.split == "eval", name
        assert group not in ("deciding", "home") or speaker.rate >= 16000, name
        p = load(name)
        rng = np.random.default_rng([EVAL_SEED, sum(map(ord, name))])
        order = [int(i) for i in rng.permutation(len(p)) if verbal(p, i)]
        for _ in range(count):
            x = utterance(p, rng, seconds=EVAL_SECONDS[group], gap=(0.15, 0.25), order=order)
            if group in ("deciding", "home") and high_band_db(x) < WIDEBAND_DB:
                raise RuntimeError(f"{name}: {high_band_db(x):.1f} dB above 4 kHz, not wideband speech")
            out.append((name, group, x))
    return out


def summary(loaded, splits=("train", "valid", "eval")):
    lines = ["| split | speaker | kind | language | source rate | prompts | seconds | median top (Hz) |",
             "|---|---|---|---|---|---|---|---|"]
    totals = {}
    for split in splits:
        for s in speakers(split):
            p = loaded[s.name]
            lines.append(f"| {split} | {s.name} | {s.kind} | {s.language} | {s.rate} | {len(p)} | {p.seconds():.1f} | "
                         f"{np.median(p.tops):.0f} |")
            t = totals.setdefault(split, {"recorded": 0.0, "tts": 0.0, "speakers": 0, "narrow": 0.0})
            t[s.kind] += p.seconds()
            t["speakers"] += 1
            if s.kind == "recorded":
                t["narrow"] += sum(b - a for (a, b), top in zip(p.bounds, p.tops) if top < 6000) / RATE
    lines.append("")
    for split, t in totals.items():
        lines.append(f"{split}: {t['speakers']} speakers, {t['recorded'] / 60:.1f} min recorded ({t['narrow'] / 60:.1f} of it "
                     f"with a top below 6 kHz) + {t['tts'] / 60:.1f} min TTS (after trimming)")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=["train", "valid", "eval", "pick"], default=None)
    args = parser.parse_args()
    check_split()
    loaded = build_all(args.split)
    print(summary(loaded, (args.split,) if args.split else ("train", "valid", "eval", "pick")))


if __name__ == "__main__":
    sys.exit(main())
