# Dates as the dashboard has always shown them in English: year first, a 24-hour clock, which
# hosts and their customers read the same way in every English-speaking country.
DATE_FORMAT = "j F Y"
DATETIME_FORMAT = "j F Y H:i e"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
TIME_FORMAT = "H:i"
