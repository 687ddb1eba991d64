/**
 * English guest texts, the reference catalog: its keys are `MessageKey`, and every other locale has exactly these
 * keys with the same argument names (typed here, checked at start-up by `checkMessages`, src/platform/i18n/i18n.ts).
 *
 * Messages are ICU message format: `{title}` is a placeholder, `{n, plural, …}` picks the form for a number (`#` is
 * the number). Each key is a whole sentence or paragraph, never a piece to concatenate; a blank line separates
 * paragraphs of a mail body. Write the typographic apostrophe (’): ICU reads a straight one before `{` as a quote.
 * `{when}` is `formatWhen`'s text, `{where}` a place (or `where.online`).
 */
export const en = {
  'when.unscheduled': 'Date to be announced',
  'where.online': 'Online',

  // the public page of an event (docs/guests.md, "The public page"): labels, notes, the form
  'page.kicker': 'Public event',
  'page.when': 'When',
  'page.where': 'Where',
  'page.organizer': 'Organizer',
  'page.seats': 'Seats',
  'page.spaces': 'Part of',
  'page.summary': '{when} — {where}',
  'page.register': 'Registration',
  'page.waitlist': 'All seats are taken: if you register, you join the waitlist.',
  'page.form.name': 'Your name',
  'page.form.email': 'Your email address',
  'page.form.website': 'Leave this field empty',
  'page.form.submit': 'Register',
  'page.form.required': '(required)',
  'page.form.optin': 'We will send you an email with a link to confirm your registration.',

  'mail.invitation.subject': 'Invitation: {title}',
  'mail.invitation.body': '{organizer} has invited you to {title} ({when}). Will you come? ' +
    'Please answer using the link below.',
  'mail.invitation.link': 'Answer the invitation',

  'mail.optin.subject': 'Please confirm your registration for {title}',
  'mail.optin.body': 'Someone — hopefully you — asked to register this address for {title} ({when}). ' +
    'To confirm, follow the link within {hours, plural, one {one hour} other {# hours}}. ' +
    'If it was not you, ignore this mail: nothing is registered.',
  'mail.optin.link': 'Confirm my registration',

  'mail.already.subject': 'You are already registered for {title}',
  'mail.already.body': 'This address is already registered for {title}, so nothing has changed. ' +
    'The link below shows your registration.',

  'mail.confirmed.subject': 'Your registration for {title} is confirmed',
  'mail.confirmed.body': 'You are registered for {title}. We look forward to seeing you!\n\n' +
    'When: {when}\nWhere: {where}',

  'mail.waitlisted.subject': 'You are on the waitlist for {title}',
  'mail.waitlisted.body': '{title} is full at the moment, so you are on the waitlist: ' +
    'you are number {position, number}. We will send you a mail as soon as a seat becomes free.',

  'mail.pending.subject': 'Your registration for {title} awaits approval',
  'mail.pending.body': 'Thank you for registering for {title}. Your registration awaits the organizer’s approval; ' +
    'we will send you a mail once it has been decided.',

  'mail.promoted.subject': 'Good news: you have a seat at {title}',
  'mail.promoted.body': 'A seat has become free and you have moved up from the waitlist: ' +
    'you are now registered for {title}.\n\nWhen: {when}\nWhere: {where}',

  'mail.tentative.subject': 'Your answer for {title}: maybe',
  'mail.tentative.body': 'You said you might come to {title}. Thank you for letting us know.',

  'mail.declined.subject': 'Your answer for {title}: not coming',
  'mail.declined.body': 'You said you will not come to {title}. Thank you for letting us know.',

  'mail.rejected.subject': 'Your registration for {title}',
  'mail.rejected.body': 'We are sorry: the organizer has declined your registration for {title}.',

  'mail.cancelled_by_guest.subject': 'Your registration for {title} is cancelled',
  'mail.cancelled_by_guest.body': 'Your registration for {title} has been cancelled, as you asked. ' +
    'We hope to see you another time.',

  'mail.event_changed.subject': 'Changes to {title}',
  'mail.event_changed.body': 'The details of {title} have changed. This is what applies now:\n\n' +
    'When: {when}\nWhere: {where}',

  'mail.event_cancelled.subject': 'Cancelled: {title}',
  'mail.event_cancelled.body': '{title} has been cancelled and will not take place. ' +
    'We are sorry for the inconvenience.',
  'mail.event_cancelled.reason': 'The organizer’s reason: {reason}',

  'mail.new_link.subject': 'Your new link for {title}',
  'mail.new_link.body': 'A new link to manage your registration for {title} has been made. ' +
    'The old link no longer works.',

  'mail.manage.link': 'Manage your registration',
  'mail.unsubscribe.label': 'Stop updates about this event',
  'mail.unsubscribe': 'To stop receiving updates about this event, open {url}',
  'mail.seats_left': '{count, plural, =0 {No seats are left.} one {One seat is left.} other {# seats are left.}}',

  'registration.accepted': 'Thank you! Check your mailbox: the mail we sent you says what happens next.',
  'error.event_not_found': 'This event cannot be found.',
  'error.phone_invalid': 'Please enter a valid phone number, with its country code.',
  'error.date_invalid': 'Please enter a valid date (YYYY-MM-DD) within the range asked.',
  'error.unknown_question': 'This form has no such question.',
  'error.registration_closed': 'Registration for this event is closed.',
  'error.registration_not_open': 'Registration for this event has not opened yet; it opens on {opens}.',
  'error.registration_off': 'This event does not take registrations.',
  'error.event_full': 'Sorry, this event is full.',
  'error.event_cancelled': 'This event has been cancelled.',
  'error.event_over': 'This event has already taken place.',
  'error.link_invalid': 'This link is not valid or has expired; please use the link in your most recent mail.',
  'error.required': 'Please fill in this field.',
  'error.too_long': '{max, plural, one {Please use at most # character.} other {Please use at most # characters.}}',
  'error.too_short': '{min, plural, one {Please use at least # character.} other {Please use at least # characters.}}',
  'error.email_invalid': 'Please enter a valid email address.',
  'error.too_many_requests': 'Too many attempts; please wait a moment and try again.',
  'error.choice_invalid': 'Please choose one of the options offered.',
  'error.number_range': 'Please enter a number from {min, number} to {max, number}.',
  'error.consent_required': 'Please give your consent to continue.'
} as const
