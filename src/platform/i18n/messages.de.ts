/**
 * German guest texts: the keys and arguments of the English catalog (messages.en.ts, which explains the format).
 * Guests are addressed formally (Sie); the organiser is "die Veranstaltungsleitung" (no gendered noun).
 */
import type { en } from './messages.en.ts'

export const de = {
  'when.unscheduled': 'Termin wird noch bekannt gegeben',
  'where.online': 'Online',

  'page.kicker': 'Öffentliche Veranstaltung',
  'page.when': 'Wann',
  'page.where': 'Wo',
  'page.organizer': 'Veranstaltungsleitung',
  'page.seats': 'Plätze',
  'page.spaces': 'Gehört zu',
  'page.summary': '{when} — {where}',
  'page.register': 'Anmeldung',
  'page.waitlist': 'Alle Plätze sind vergeben: Wenn Sie sich anmelden, kommen Sie auf die Warteliste.',
  'page.form.name': 'Ihr Name',
  'page.form.email': 'Ihre E-Mail-Adresse',
  'page.form.website': 'Dieses Feld bitte leer lassen',
  'page.form.submit': 'Anmelden',
  'page.form.required': '(Pflichtfeld)',
  'page.form.optin': 'Wir schicken Ihnen eine E-Mail mit einem Link, mit dem Sie Ihre Anmeldung bestätigen.',

  'mail.invitation.subject': 'Einladung: {title}',
  'mail.invitation.body': '{organizer} hat Sie zu {title} eingeladen ({when}). Kommen Sie? ' +
    'Bitte antworten Sie über den Link unten.',
  'mail.invitation.link': 'Auf die Einladung antworten',

  'mail.optin.subject': 'Bitte bestätigen Sie Ihre Anmeldung zu {title}',
  'mail.optin.body': 'Jemand – hoffentlich Sie – hat diese Adresse für {title} ({when}) angemeldet. ' +
    'Zur Bestätigung folgen Sie bitte {hours, plural, one {innerhalb einer Stunde} other {innerhalb von # Stunden}} ' +
    'dem Link. Falls Sie das nicht waren, ignorieren Sie diese E-Mail: Es wird nichts angemeldet.',
  'mail.optin.link': 'Anmeldung bestätigen',

  'mail.already.subject': 'Sie sind bereits für {title} angemeldet',
  'mail.already.body': 'Diese Adresse ist bereits für {title} angemeldet, es hat sich also nichts geändert. ' +
    'Über den Link unten sehen Sie Ihre Anmeldung.',

  'mail.confirmed.subject': 'Ihre Anmeldung zu {title} ist bestätigt',
  'mail.confirmed.body': 'Sie sind für {title} angemeldet. Wir freuen uns auf Sie!\n\n' +
    'Wann: {when}\nWo: {where}',

  'mail.waitlisted.subject': 'Sie stehen auf der Warteliste für {title}',
  'mail.waitlisted.body': '{title} ist derzeit ausgebucht, daher stehen Sie auf der Warteliste: ' +
    'Sie sind Nummer {position, number}. Sobald ein Platz frei wird, erhalten Sie eine E-Mail.',

  'mail.pending.subject': 'Ihre Anmeldung zu {title} wartet auf Freigabe',
  'mail.pending.body': 'Danke für Ihre Anmeldung zu {title}. Sie muss noch von der Veranstaltungsleitung ' +
    'freigegeben werden; sobald darüber entschieden ist, erhalten Sie eine E-Mail.',

  'mail.promoted.subject': 'Gute Nachricht: Sie haben einen Platz bei {title}',
  'mail.promoted.body': 'Ein Platz ist frei geworden und Sie sind von der Warteliste nachgerückt: ' +
    'Sie sind jetzt für {title} angemeldet.\n\nWann: {when}\nWo: {where}',

  'mail.tentative.subject': 'Ihre Antwort zu {title}: vielleicht',
  'mail.tentative.body': 'Sie haben geantwortet, dass Sie vielleicht zu {title} kommen. ' +
    'Danke, dass Sie uns Bescheid geben.',

  'mail.declined.subject': 'Ihre Antwort zu {title}: Absage',
  'mail.declined.body': 'Sie haben geantwortet, dass Sie nicht zu {title} kommen. Danke, dass Sie uns Bescheid geben.',

  'mail.rejected.subject': 'Ihre Anmeldung zu {title}',
  'mail.rejected.body': 'Es tut uns leid: Die Veranstaltungsleitung hat Ihre Anmeldung zu {title} abgelehnt.',

  'mail.cancelled_by_guest.subject': 'Ihre Anmeldung zu {title} ist storniert',
  'mail.cancelled_by_guest.body': 'Ihre Anmeldung zu {title} wurde wie gewünscht storniert. ' +
    'Wir hoffen, Sie ein andermal zu sehen.',

  'mail.event_changed.subject': 'Änderungen bei {title}',
  'mail.event_changed.body': 'Die Angaben zu {title} haben sich geändert. Jetzt gilt:\n\n' +
    'Wann: {when}\nWo: {where}',

  'mail.event_cancelled.subject': 'Abgesagt: {title}',
  'mail.event_cancelled.body': '{title} wurde abgesagt und findet nicht statt. ' +
    'Wir bitten um Entschuldigung für die Umstände.',
  'mail.event_cancelled.reason': 'Begründung der Veranstaltungsleitung: {reason}',

  'mail.new_link.subject': 'Ihr neuer Link für {title}',
  'mail.new_link.body': 'Für Ihre Anmeldung zu {title} wurde ein neuer Link erstellt. ' +
    'Der alte Link funktioniert nicht mehr.',

  'mail.manage.link': 'Anmeldung verwalten',
  'mail.unsubscribe.label': 'Keine Neuigkeiten mehr zu dieser Veranstaltung',
  'mail.unsubscribe': 'Wenn Sie keine Neuigkeiten zu dieser Veranstaltung mehr erhalten möchten, öffnen Sie {url}',
  'mail.seats_left': '{count, plural, =0 {Es sind keine Plätze mehr frei.} one {Es ist noch ein Platz frei.} ' +
    'other {Es sind noch # Plätze frei.}}',

  'registration.accepted': 'Vielen Dank! Bitte sehen Sie in Ihr Postfach: ' +
    'Die Mail, die wir Ihnen geschickt haben, sagt, wie es weitergeht.',
  'error.event_not_found': 'Diese Veranstaltung wurde nicht gefunden.',
  'error.phone_invalid': 'Bitte geben Sie eine gültige Telefonnummer mit Ländervorwahl ein.',
  'error.date_invalid': 'Bitte geben Sie ein gültiges Datum (JJJJ-MM-TT) im erfragten Zeitraum ein.',
  'error.unknown_question': 'Dieses Formular hat keine solche Frage.',
  'error.registration_closed': 'Die Anmeldung zu dieser Veranstaltung ist geschlossen.',
  'error.registration_not_open': 'Die Anmeldung zu dieser Veranstaltung ist noch nicht geöffnet; ' +
    'sie öffnet am {opens}.',
  'error.registration_off': 'Für diese Veranstaltung ist keine Anmeldung möglich.',
  'error.event_full': 'Diese Veranstaltung ist leider ausgebucht.',
  'error.event_cancelled': 'Diese Veranstaltung wurde abgesagt.',
  'error.event_over': 'Diese Veranstaltung hat bereits stattgefunden.',
  'error.link_invalid': 'Dieser Link ist ungültig oder abgelaufen; bitte verwenden Sie den Link aus Ihrer ' +
    'neuesten E-Mail.',
  'error.required': 'Bitte füllen Sie dieses Feld aus.',
  'error.too_long': 'Bitte verwenden Sie höchstens {max, plural, one {# Zeichen} other {# Zeichen}}.',
  'error.too_short': 'Bitte verwenden Sie mindestens {min, plural, one {# Zeichen} other {# Zeichen}}.',
  'error.email_invalid': 'Bitte geben Sie eine gültige E-Mail-Adresse ein.',
  'error.too_many_requests': 'Zu viele Versuche; bitte warten Sie einen Moment und versuchen Sie es dann erneut.',
  'error.choice_invalid': 'Bitte wählen Sie eine der angebotenen Möglichkeiten.',
  'error.number_range': 'Bitte geben Sie eine Zahl von {min, number} bis {max, number} ein.',
  'error.consent_required': 'Bitte geben Sie Ihre Einwilligung, um fortzufahren.'
} satisfies Record<keyof typeof en, string>
