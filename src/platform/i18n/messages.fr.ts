/**
 * French guest texts: the keys and arguments of the English catalog (messages.en.ts, which explains the format).
 * Guests are addressed with "vous"; titles stand in guillemets (« {title} »), so no article has to agree with them,
 * and the organiser is "l’organisation". Apostrophes are typographic (’), which ICU never reads as a quote.
 */
import type { en } from './messages.en.ts'

export const fr = {
  'when.unscheduled': 'Date à confirmer',
  'where.online': 'En ligne',

  'page.kicker': 'Événement public',
  'page.when': 'Quand',
  'page.where': 'Où',
  'page.organizer': 'Organisation',
  'page.seats': 'Places',
  'page.spaces': 'Fait partie de',
  'page.summary': '{when} — {where}',
  'page.register': 'Inscription',
  'page.waitlist': 'Toutes les places sont prises : si vous vous inscrivez, vous serez sur la liste d’attente.',
  'page.form.name': 'Votre nom',
  'page.form.email': 'Votre adresse e-mail',
  'page.form.website': 'Laissez ce champ vide',
  'page.form.submit': 'S’inscrire',
  'page.form.required': '(obligatoire)',
  'page.form.optin': 'Nous vous enverrons un e-mail avec un lien pour confirmer votre inscription.',

  'mail.invitation.subject': 'Invitation : « {title} »',
  'mail.invitation.body': '{organizer} vous invite à « {title} » ({when}). Viendrez-vous ? ' +
    'Merci de répondre via le lien ci-dessous.',
  'mail.invitation.link': 'Répondre à l’invitation',

  'mail.optin.subject': 'Veuillez confirmer votre inscription à « {title} »',
  'mail.optin.body': 'Quelqu’un – vous, nous l’espérons – a demandé à inscrire cette adresse à « {title} » ' +
    '({when}). Pour confirmer, suivez le lien dans un délai ' +
    '{hours, plural, =1 {d’une heure} one {de # heure} other {de # heures}}. ' +
    'Si ce n’était pas vous, ignorez ce message : aucune inscription n’est enregistrée.',
  'mail.optin.link': 'Confirmer mon inscription',

  'mail.already.subject': 'Cette adresse est déjà inscrite à « {title} »',
  'mail.already.body': 'Cette adresse est déjà inscrite à « {title} » : rien n’a donc changé. ' +
    'Le lien ci-dessous vous permet de consulter votre inscription.',

  'mail.confirmed.subject': 'Votre inscription à « {title} » est confirmée',
  'mail.confirmed.body': 'Votre inscription à « {title} » est confirmée. Au plaisir de vous y voir !\n\n' +
    'Quand : {when}\nOù : {where}',

  'mail.waitlisted.subject': 'Votre inscription à « {title} » est sur liste d’attente',
  'mail.waitlisted.body': '« {title} » est complet pour le moment : votre inscription figure donc sur la liste ' +
    'd’attente, en position {position, number}. Vous recevrez un message dès qu’une place se libérera.',

  'mail.pending.subject': 'Votre inscription à « {title} » attend une validation',
  'mail.pending.body': 'Merci pour votre inscription à « {title} ». Elle doit encore être validée par ' +
    'l’organisation ; vous recevrez un message dès qu’une décision aura été prise.',

  'mail.promoted.subject': 'Bonne nouvelle : une place vous attend à « {title} »',
  'mail.promoted.body': 'Une place s’est libérée et votre inscription a quitté la liste d’attente : ' +
    'votre place à « {title} » est confirmée.\n\nQuand : {when}\nOù : {where}',

  'mail.tentative.subject': 'Votre réponse pour « {title} » : peut-être',
  'mail.tentative.body': 'Vous avez répondu que vous viendrez peut-être à « {title} ». Merci pour votre réponse.',

  'mail.declined.subject': 'Votre réponse pour « {title} » : vous ne viendrez pas',
  'mail.declined.body': 'Vous avez répondu que vous ne viendrez pas à « {title} ». Merci pour votre réponse.',

  'mail.rejected.subject': 'Votre inscription à « {title} »',
  'mail.rejected.body': 'Nous sommes désolés : l’organisation a refusé votre inscription à « {title} ».',

  'mail.cancelled_by_guest.subject': 'Votre inscription à « {title} » est annulée',
  'mail.cancelled_by_guest.body': 'Votre inscription à « {title} » a été annulée, comme vous l’avez demandé. ' +
    'Nous espérons vous voir une autre fois.',

  'mail.event_changed.subject': 'Changements concernant « {title} »',
  'mail.event_changed.body': 'Les informations concernant « {title} » ont changé. Voici ce qui s’applique ' +
    'désormais :\n\nQuand : {when}\nOù : {where}',

  'mail.event_cancelled.subject': 'Annulation : « {title} »',
  'mail.event_cancelled.body': 'L’événement « {title} » est annulé et n’aura pas lieu. ' +
    'Nous vous prions de nous excuser pour la gêne occasionnée.',
  'mail.event_cancelled.reason': 'Motif indiqué par l’organisation : {reason}',

  'mail.new_link.subject': 'Votre nouveau lien pour « {title} »',
  'mail.new_link.body': 'Un nouveau lien pour gérer votre inscription à « {title} » a été créé. ' +
    'L’ancien lien ne fonctionne plus.',

  'mail.manage.link': 'Gérer mon inscription',
  'mail.unsubscribe.label': 'Ne plus recevoir de nouvelles de cet événement',
  'mail.unsubscribe': 'Pour ne plus recevoir de nouvelles de cet événement, ouvrez {url}',
  'mail.seats_left': '{count, plural, =0 {Il ne reste plus aucune place.} one {Il reste une place.} ' +
    'other {Il reste # places.}}',

  'registration.accepted': 'Merci ! Consultez votre boîte de réception : ' +
    'le message que nous vous avons envoyé indique la suite.',
  'error.event_not_found': 'Cet événement est introuvable.',
  'error.phone_invalid': 'Veuillez saisir un numéro de téléphone valide, avec son indicatif pays.',
  'error.date_invalid': 'Veuillez saisir une date valide (AAAA-MM-JJ) dans la période demandée.',
  'error.unknown_question': 'Ce formulaire ne contient pas cette question.',
  'error.registration_closed': 'Les inscriptions à cet événement sont closes.',
  'error.registration_not_open': 'Les inscriptions à cet événement ne sont pas encore ouvertes ; ' +
    'elles ouvriront le {opens}.',
  'error.registration_off': 'Il n’est pas possible de s’inscrire à cet événement.',
  'error.event_full': 'Désolés, cet événement est complet.',
  'error.event_cancelled': 'Cet événement a été annulé.',
  'error.event_over': 'Cet événement a déjà eu lieu.',
  'error.link_invalid': 'Ce lien n’est pas valide ou a expiré ; veuillez utiliser le lien de votre message ' +
    'le plus récent.',
  'error.required': 'Veuillez remplir ce champ.',
  'error.too_long': '{max, plural, one {Veuillez utiliser au plus # caractère.} ' +
    'other {Veuillez utiliser au plus # caractères.}}',
  'error.too_short': '{min, plural, one {Veuillez utiliser au moins # caractère.} ' +
    'other {Veuillez utiliser au moins # caractères.}}',
  'error.email_invalid': 'Veuillez saisir une adresse e-mail valide.',
  'error.too_many_requests': 'Trop de tentatives ; veuillez patienter un instant, puis réessayer.',
  'error.choice_invalid': 'Veuillez choisir l’une des options proposées.',
  'error.number_range': 'Veuillez saisir un nombre entre {min, number} et {max, number}.',
  'error.consent_required': 'Veuillez donner votre consentement pour continuer.'
} satisfies Record<keyof typeof en, string>
