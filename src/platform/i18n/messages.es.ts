/**
 * Spanish guest texts: the keys and arguments of the English catalog (messages.en.ts, which explains the format).
 * Guests are addressed formally (usted); titles stand in «…», and the organiser is "la organización".
 */
import type { en } from './messages.en.ts'

export const es = {
  'when.unscheduled': 'Fecha por confirmar',
  'where.online': 'En línea',

  'page.kicker': 'Evento público',
  'page.when': 'Cuándo',
  'page.where': 'Dónde',
  'page.organizer': 'Organización',
  'page.seats': 'Plazas',
  'page.spaces': 'Forma parte de',
  'page.summary': '{when} — {where}',
  'page.register': 'Inscripción',
  'page.waitlist': 'Todas las plazas están ocupadas: si se inscribe, pasará a la lista de espera.',
  'page.form.name': 'Su nombre',
  'page.form.email': 'Su dirección de correo electrónico',
  'page.form.website': 'Deje este campo vacío',
  'page.form.submit': 'Inscribirme',
  'page.form.required': '(obligatorio)',
  'page.form.optin': 'Le enviaremos un correo con un enlace para confirmar su inscripción.',

  'mail.invitation.subject': 'Invitación: «{title}»',
  'mail.invitation.body': '{organizer} le invita a «{title}» ({when}). ¿Asistirá? ' +
    'Por favor, responda mediante el enlace de abajo.',
  'mail.invitation.link': 'Responder a la invitación',

  'mail.optin.subject': 'Confirme su inscripción en «{title}»',
  'mail.optin.body': 'Alguien —esperamos que usted— ha solicitado inscribir esta dirección en «{title}» ' +
    '({when}). Para confirmarlo, siga el enlace en un plazo de {hours, plural, one {una hora} other {# horas}}. ' +
    'Si no ha sido usted, ignore este correo: no se ha inscrito nada.',
  'mail.optin.link': 'Confirmar mi inscripción',

  'mail.already.subject': 'Esta dirección ya está inscrita en «{title}»',
  'mail.already.body': 'Esta dirección ya está inscrita en «{title}», así que no ha cambiado nada. ' +
    'En el enlace de abajo puede ver su inscripción.',

  'mail.confirmed.subject': 'Su inscripción en «{title}» está confirmada',
  'mail.confirmed.body': 'Su inscripción en «{title}» está confirmada. ¡Le esperamos!\n\n' +
    'Cuándo: {when}\nDónde: {where}',

  'mail.waitlisted.subject': 'Su inscripción en «{title}» está en la lista de espera',
  'mail.waitlisted.body': '«{title}» está completo por ahora, así que su inscripción está en la lista de espera, ' +
    'en el puesto {position, number}. Recibirá un correo en cuanto quede una plaza libre.',

  'mail.pending.subject': 'Su inscripción en «{title}» está pendiente de aprobación',
  'mail.pending.body': 'Gracias por inscribirse en «{title}». La organización todavía debe aprobar su inscripción; ' +
    'recibirá un correo en cuanto se tome una decisión.',

  'mail.promoted.subject': 'Buenas noticias: tiene plaza en «{title}»',
  'mail.promoted.body': 'Ha quedado una plaza libre y su inscripción ha salido de la lista de espera: ' +
    'tiene plaza en «{title}».\n\nCuándo: {when}\nDónde: {where}',

  'mail.tentative.subject': 'Su respuesta para «{title}»: quizás',
  'mail.tentative.body': 'Ha respondido que quizás asista a «{title}». Gracias por avisarnos.',

  'mail.declined.subject': 'Su respuesta para «{title}»: no asistirá',
  'mail.declined.body': 'Ha respondido que no asistirá a «{title}». Gracias por avisarnos.',

  'mail.rejected.subject': 'Su inscripción en «{title}»',
  'mail.rejected.body': 'Lo sentimos: la organización ha rechazado su inscripción en «{title}».',

  'mail.cancelled_by_guest.subject': 'Su inscripción en «{title}» está cancelada',
  'mail.cancelled_by_guest.body': 'Su inscripción en «{title}» se ha cancelado, tal como solicitó. ' +
    'Esperamos verle en otra ocasión.',

  'mail.event_changed.subject': 'Cambios en «{title}»',
  'mail.event_changed.body': 'Los datos de «{title}» han cambiado. Esto es lo que se aplica ahora:\n\n' +
    'Cuándo: {when}\nDónde: {where}',

  'mail.event_cancelled.subject': 'Cancelado: «{title}»',
  'mail.event_cancelled.body': 'El evento «{title}» se ha cancelado y no se celebrará. Disculpe las molestias.',
  'mail.event_cancelled.reason': 'Motivo indicado por la organización: {reason}',

  'mail.new_link.subject': 'Su nuevo enlace para «{title}»',
  'mail.new_link.body': 'Se ha creado un nuevo enlace para gestionar su inscripción en «{title}». ' +
    'El enlace anterior ya no funciona.',

  'mail.manage.link': 'Gestionar mi inscripción',
  'mail.unsubscribe.label': 'Dejar de recibir novedades de este evento',
  'mail.unsubscribe': 'Para dejar de recibir novedades sobre este evento, abra {url}',
  'mail.seats_left': '{count, plural, =0 {No quedan plazas.} one {Queda una plaza.} other {Quedan # plazas.}}',

  'registration.accepted': '¡Gracias! Revise su buzón: el correo que le hemos enviado indica los siguientes pasos.',
  'error.event_not_found': 'No se encuentra este evento.',
  'error.phone_invalid': 'Introduzca un número de teléfono válido, con su prefijo de país.',
  'error.date_invalid': 'Introduzca una fecha válida (AAAA-MM-DD) dentro del intervalo indicado.',
  'error.unknown_question': 'Este formulario no tiene esa pregunta.',
  'error.registration_closed': 'Las inscripciones para este evento están cerradas.',
  'error.registration_not_open': 'Las inscripciones para este evento aún no están abiertas; se abren el {opens}.',
  'error.registration_off': 'Este evento no admite inscripciones.',
  'error.event_full': 'Lo sentimos, este evento está completo.',
  'error.event_cancelled': 'Este evento se ha cancelado.',
  'error.event_over': 'Este evento ya se ha celebrado.',
  'error.link_invalid': 'Este enlace no es válido o ha caducado; utilice el enlace de su correo más reciente.',
  'error.required': 'Rellene este campo.',
  'error.too_long': '{max, plural, one {Use como máximo # carácter.} other {Use como máximo # caracteres.}}',
  'error.too_short': '{min, plural, one {Use como mínimo # carácter.} other {Use como mínimo # caracteres.}}',
  'error.email_invalid': 'Introduzca una dirección de correo electrónico válida.',
  'error.too_many_requests': 'Demasiados intentos; espere un momento y vuelva a intentarlo.',
  'error.choice_invalid': 'Elija una de las opciones ofrecidas.',
  'error.number_range': 'Introduzca un número entre {min, number} y {max, number}.',
  'error.consent_required': 'Debe dar su consentimiento para continuar.'
} satisfies Record<keyof typeof en, string>
